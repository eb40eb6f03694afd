// Package chaos is the client side of fault injection: a client of each
// node's admin API (actor, link, clock, disk and power faults, the
// supervision journal), whose types the node's API serves; signals for
// nodes on this host; and Run, `skein chaos run`: a local cluster of node
// processes (or an existing one), a workload recorded into a
// history.History, the named scenarios of faults, the heal and the check.
// It talks to nodes over the wire only, as any user's tool would.
package chaos
