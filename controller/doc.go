// Package controller owns the cluster metadata. Its actor, Controller, is
// the only writer of the metadata log: it validates each command against
// the current image (controller/image), places new partitions, writes the
// command's records as one synced batch, applies them and publishes the
// new image. On a restart it rebuilds the image by replaying the log.
//
// The package also holds a raft quorum member (member.go): etcd raft's
// RawNode as a deterministic state machine with static voters, whose
// entries, hard state and snapshot are kept by logDisk (disk.go) in a
// metadata log directory. It is tested on its own, over a simulated
// network and crashable filesystems; the Controller actor does not use it
// yet, so a node's metadata is still its own.
package controller
