package coordinator

import (
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// TopicsDeleted reaches a group whose actor is loaded and one whose offsets
// are only in the log: both write tombstones for their offsets on the
// deleted topic, keep the rest, and a coordinator started again on the same
// log (a restart) finds them gone.
func TestTopicsDeletedTombstonesEveryGroup(t *testing.T) {
	sys, h := hostOffsets(t)

	// "cold" committed before this coordinator started: no actor.
	o := Offset{Offset: 7, LeaderEpoch: -1, CommitTimestamp: time.Now().UnixMilli()}
	appendRecords(t, sys, h, OffsetRecord("cold", "t", 0, o), OffsetRecord("cold", "t", 1, o), OffsetRecord("cold", "kept", 0, o))

	dir := &Directory{}
	groups := spawnGroups(t, sys, dir, "groups")
	commitOffsets(t, sys, groups, h, "warm", map[string]int32{"t": 0, "kept": 0})
	if dir.Get("cold") != nil {
		t.Fatal("the cold group has an actor before the deletion")
	}

	sys.Root.Send(groups, &TopicsDeleted{Topics: []string{"t"}, Partitions: []*partition.Handle{h}})

	// Durable: a restore from the log up to the high watermark, as a
	// restarted coordinator does, no longer has them.
	waitFor(t, "tombstones for the offsets on t", func() bool {
		for _, g := range []string{"cold", "warm"} {
			if restoreGroup(t, h, g).CommittedTopics()["t"] != nil {
				return false
			}
		}
		return true
	})
	for _, g := range []string{"cold", "warm"} {
		if got := restoreGroup(t, h, g).CommittedTopics()["kept"]; !slices.Equal(got, []int32{0}) {
			t.Errorf("%s: offsets on the kept topic after the deletion = %v, want [0]", g, got)
		}
	}
	if dir.Get("cold") == nil {
		t.Error("the cold group was not given an actor")
	}
	// And the actors forgot them.
	for _, g := range []string{"cold", "warm"} {
		waitFor(t, g+" forgetting t", func() bool { return fetchOffset(t, sys, groups, h, g, "t") < 0 })
		if got, want := fetchOffset(t, sys, groups, h, g, "kept"), map[string]int64{"cold": 7, "warm": 1}[g]; got != want {
			t.Errorf("%s: offset on kept = %d, want %d", g, got, want)
		}
	}

	// A coordinator started again on the same log.
	again := spawnGroups(t, sys, &Directory{}, "groups-again")
	for _, g := range []string{"cold", "warm"} {
		if got := fetchOffset(t, sys, again, h, g, "t"); got >= 0 {
			t.Errorf("%s: after a restart, offset on t = %d, want none", g, got)
		}
	}
}

// hostOffsets starts an actor system hosting __consumer_offsets
// partition 0, led here, in memory.
func hostOffsets(t *testing.T) (*actor.ActorSystem, *partition.Handle) {
	t.Helper()
	sys := actors.NewSystem(zerolog.Nop())
	t.Cleanup(sys.Shutdown)
	reg := partition.NewRegistry()
	parts, err := sys.Root.SpawnNamed(partition.SupervisorProps(partition.SupervisorConfig{Registry: reg, FS: vfs.NewCrashableMem(), Logger: zerolog.Nop()},
		actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), "partitions")
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(parts, &partition.Host{Config: partition.Config{
		Topic: OffsetsTopic, TopicID: image.TopicID{1}, Dir: partition.Dir("/data", OffsetsTopic, 0),
		Clock: clock.Real, TopicConfig: configs.DefaultTopic(), Durability: configs.DurabilityFsync,
		State:        partition.State{Leader: 0, Replicas: []int32{0}, ISR: []int32{0}},
		TickInterval: time.Hour, Logger: zerolog.Nop(),
	}})
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return sys, reg.WaitReady(OffsetsTopic, 0, done)
}

func spawnGroups(t *testing.T, sys *actor.ActorSystem, dir *Directory, name string) *actor.PID {
	t.Helper()
	pid, err := sys.Root.SpawnNamed(SupervisorProps(SupervisorConfig{Directory: dir, Logger: zerolog.Nop()},
		actor.NewOneForOneStrategy(10, time.Minute, actor.DefaultDecider)), name)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// appendRecords writes records to the partition as a group actor would,
// and waits for them to be durable.
func appendRecords(t *testing.T, sys *actor.ActorSystem, h *partition.Handle, recs ...Record) {
	t.Helper()
	srs := make([]store.Record, len(recs))
	for i, r := range recs {
		srs[i] = store.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	now := time.Now().UnixMilli()
	batch, err := store.AppendBatch(nil, store.Header{LastOffsetDelta: int32(len(recs) - 1), BaseTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, srs, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	res := make(chan partition.AppendResult, 1)
	sys.Root.Send(h.PID, &partition.Append{Records: batch, Acks: -1, Reply: func(r partition.AppendResult) { res <- r }})
	select {
	case r := <-res:
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("append not answered")
	}
}

// askGroup sends one request to a group's actor, opened through the
// supervisor as transport does, and returns the answer.
func askGroup(t *testing.T, sys *actor.ActorSystem, groups *actor.PID, h *partition.Handle, group string, req kmsg.Request) kmsg.Response {
	t.Helper()
	res, err := actors.Ask(sys, groups, &Open{Group: group, Partition: h}, 10*time.Second)
	if err != nil || res.(*OpenResult).PID == nil {
		t.Fatalf("open %s: %v", group, err)
	}
	out := make(chan kmsg.Response, 1)
	sys.Root.Send(res.(*OpenResult).PID, &Request{Req: req, Reply: func(r kmsg.Response) { out <- r }})
	select {
	case r := <-out:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: %T not answered", group, req)
		return nil
	}
}

// commitOffsets commits offset 1 on the given partitions as a simple consumer.
func commitOffsets(t *testing.T, sys *actor.ActorSystem, groups *actor.PID, h *partition.Handle, group string, tps map[string]int32) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 8, group, -1
	for topic, p := range tps {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := askGroup(t, sys, groups, h, group, req).(*kmsg.OffsetCommitResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("commit %s %s/%d: %v", group, rt.Topic, rp.Partition, err)
			}
		}
	}
}

// fetchOffset returns a group's committed offset on partition 0 of topic, -1
// for none.
func fetchOffset(t *testing.T, sys *actor.ActorSystem, groups *actor.PID, h *partition.Handle, group, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp := askGroup(t, sys, groups, h, group, req).(*kmsg.OffsetFetchResponse)
	if len(resp.Groups) != 1 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
		t.Fatalf("%s: unexpected OffsetFetch answer %+v", group, resp)
	}
	return resp.Groups[0].Topics[0].Partitions[0].Offset
}

// restoreGroup rebuilds a group from the partition, as its actor does when it
// starts.
func restoreGroup(t *testing.T, h *partition.Handle, group string) *Group {
	t.Helper()
	g := NewGroup(group, Config{Now: time.Now})
	if err := readPartition(h.View().Log, func(r Record) { _ = g.Restore(r) }, g.CompleteTxn); err != nil {
		t.Fatal(err)
	}
	return g
}

// waitFor polls cond, bounded: the supervisor and the group actors
// work asynchronously.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
