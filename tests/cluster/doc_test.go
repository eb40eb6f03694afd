// Package cluster tests Skein as a cluster of three `skein node` processes
// forming one controller quorum on 127.0.0.11, .12 and .13: real clients
// (franz-go, sarama, kcat) served by whichever node they bootstrap from,
// and what the cluster keeps through faults: the active controller, leaders,
// group and transaction coordinators killed with SIGKILL; leaders and
// followers paused with SIGSTOP; rolling restarts; a restarted leader with
// a torn log; a leader or the active controller cut off from the others
// (network namespaces, netns*_test.go); actor panics under load; extension
// instances failing over; `skein chaos` commands across the nodes. The
// history checker (package history, fed by loghistory_test.go) decides
// from what the clients saw whether anything acknowledged was lost,
// duplicated or reordered.
//
// The nodes are child processes of the test, built once by TestMain (with
// -race when the test binary is), so that a kill is a real crash: no
// deferred function runs and nothing in memory survives.
package cluster
