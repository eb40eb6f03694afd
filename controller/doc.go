// Package controller is the controller quorum member: an actor driving etcd
// raft's RawNode, the only writer of cluster metadata. It places partitions,
// elects leaders, and tracks broker liveness and fencing.
package controller
