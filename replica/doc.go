// Package replica holds the replication logic of a partition as
// deterministic state machines, without IO or clock, for the partition
// actors to drive. Today it has the leader's account of its replicas
// (Leader: followers' fetch offsets, their caught-up times, the high
// watermark over the ISR, the ISR changes to ask the controller for) and a
// follower's fetch position (Follower: what it fetches, when it truncates,
// when it waits for newer metadata). No actor drives them yet; a partition
// still has one replica.
package replica
