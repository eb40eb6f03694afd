// Package replica holds the replication logic of a partition as
// deterministic state machines, without IO or clock, which the partition
// actors drive (partition/roles.go): the leader's account of its replicas
// (Leader: followers' fetch offsets, their caught-up times, the high
// watermark over the ISR, the ISR changes to ask the controller for) and a
// follower's fetch position (Follower: what it fetches, when and where it
// truncates, when it waits for newer metadata). They are tested
// datadriven, step by step, from the scripts in testdata.
package replica
