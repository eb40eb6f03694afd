// Package cluster tests Skein as a cluster of three `skein node` processes
// forming one controller quorum on 127.0.0.11, .12 and .13: that real
// clients (franz-go, sarama, kcat) are served by whichever node they
// bootstrap from, and that the cluster's topic metadata survives the active
// controller being killed with SIGKILL again and again, every
// acknowledged CreateTopics and DeleteTopics holding exactly once.
//
// The nodes are child processes of the test, built once by TestMain (with
// -race when the test binary is), so that a kill is a real crash: no
// deferred function runs and nothing in memory survives.
package cluster
