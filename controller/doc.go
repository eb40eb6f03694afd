// Package controller owns the cluster metadata. Every node that has the
// controller role runs a Controller actor, its seat in the controller
// quorum: etcd raft's RawNode (member.go), with the voters of
// controller.quorum.voters (this node alone when that is empty), driven
// by the actor. Raft's entries, hard state and snapshots live in the
// node's metadata log directory (logDisk, disk.go); its messages travel
// to the other voters' controllers over remoting (RaftMessage), a message
// over 1 MiB (a snapshot, a big command's entry) in parts (chunks.go), so
// that none exceeds a remoting frame.
//
// The raft leader is the active controller. It decides each command
// (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
// AllocateProducerIDs, AlterPartition, ElectLeaders, AlterReassignments,
// AlterExtensions, AlterScramCredentials, and the brokers' registrations
// and fencing) against its
// image (controller/image) and places new partitions
// on live brokers; the command's records and its result are one raft
// entry, and the commands queued together are persisted together. Every
// member applies committed entries in order and publishes each new image;
// the member that took a command answers it once it has applied the
// entry itself. A command decided without records (refused, say a topic
// that exists) is answered once the member has applied every entry the
// active controller had proposed when it decided, so that what the
// answer says is in the member's image (as Kafka's controller defers such
// answers to its highest pending offset). A command given to another member is forwarded to the
// active controller with a request id, and sent again until answered or
// timed out; the result kept in the log lets a retry be answered without
// deciding it twice.
//
// Brokers register (id, incarnation, addresses, rack) and heartbeat the
// active controller (brokers.go); one silent for broker.session.timeout.ms
// is fenced: it leaves the ISRs it is not the last member of, and each
// partition it led gets the first live replica of its ISR as leader, or
// none until it heartbeats or registers again (or, where the topic's
// unclean.leader.election.enable allows, a live replica outside the ISR).
// A broker that registers a new incarnation gives up its leaderships and
// ISR places to live ISR members, and earns them back by catching up. A
// broker shutting down (ShutDown) stops heartbeating and is fenced at once.
//
// Elections beyond fencing (elections.go): preferred-replica and unclean
// ElectLeaders, which the active controller also takes itself every
// leader.imbalance.check.interval.seconds. Reassignments (reassign.go)
// add the target replicas at once and complete when the last of them joins
// the ISR (AlterPartition).
//
// A controller-only node's Controller (Config.NoBroker) is a voter that
// registers no broker and never heartbeats: the image never lists it.
//
// A broker-only node's Controller is an observer (observer.go): no raft
// member, it fetches committed entries from the voters and applies them,
// and pulls a snapshot or an entry over 1 MiB piece by piece.
//
// Every Controller reports its Status (Config.Quorum): the active
// controller it knows, or none, and then since when (NoLeaderSince). A
// voter forgets the leader when raft does (check quorum, an election
// timeout without a majority); an observer when no voter has named one for
// observerLeaderTimeout. Without one the node has no quorum, and its image
// is as of NoLeaderSince: the node's /readyz says so.
//
// On a restart the member reloads its snapshot and entries and the image
// is rebuilt as raft hands the committed entries back. A metadata log
// written by a Skein from before the quorum becomes its first snapshot.
package controller
