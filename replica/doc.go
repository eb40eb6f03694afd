// Package replica holds the replication logic of a partition as
// deterministic state machines, without IO or clock, for the partition
// actors to drive. Today it has the leader's account of its replicas
// (Leader): followers' fetch offsets, their caught-up times, the high
// watermark over the ISR, and the ISR changes to ask the controller for.
// No actor drives it yet; a partition still has one replica.
package replica
