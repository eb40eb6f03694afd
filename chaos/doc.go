// Package chaos is the client side of fault injection: a client of each
// node's admin API (actor, link, clock and disk faults, the supervision
// journal), signals for nodes on this host, and `skein chaos`'s commands
// built on them. It talks to nodes over the wire only, as any user's tool
// would.
package chaos
