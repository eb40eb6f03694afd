package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

// An append over remoting (partition.RemoteAppend), as a writer inside
// the cluster sends it: this test process joins the nodes' remoting as a
// writer of its own, appends an idempotent batch to a partition's leader,
// sends it again as a writer retrying after a lost answer would, and
// reads the partition with a Kafka consumer: the record is there once.
// A node that does not lead the partition refuses with
// NOT_LEADER_OR_FOLLOWER.
func TestAppendOverRemoting(t *testing.T) {
	c := newCluster(t)
	c.startAll()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := kadm.NewClient(c.client([]int{1, 2, 3}))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "remote"); err != nil {
		t.Fatal(err)
	}
	var leader int32
	waitFor(t, readyTimeout, "node 1 knowing the leader of remote-0", func() string {
		v, err := c.view(ctx, 1)
		if err != nil {
			return err.Error()
		}
		if tv, ok := v.topics["remote"]; !ok || len(tv.leaders) != 3 || tv.leaders[0] < 1 {
			return fmt.Sprintf("remote: %+v", tv)
		}
		leader = v.topics["remote"].leaders[0]
		return ""
	})
	other := leader%numNodes + 1

	// A producer id from the cluster, as an idempotent writer gets one.
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	iresp, err := init.RequestWith(ctx, c.seeds[1])
	if err != nil || iresp.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v %v", err, kerr.ErrorForCode(iresp.ErrorCode))
	}
	now := time.Now().UnixMilli()
	batch, err := store.AppendBatch(nil, store.Header{
		ProducerID: iresp.ProducerID, ProducerEpoch: iresp.ProducerEpoch, BaseSequence: 0,
		BaseTimestamp: now, MaxTimestamp: now,
	}, []store.Record{{Key: []byte("k"), Value: []byte("from inside the cluster")}}, store.CodecNone)
	if err != nil {
		t.Fatal(err)
	}

	sys := actors.NewSystem(zerolog.Nop())
	if _, _, err := actors.StartRemote(sys, actors.RemoteConfig{Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	appendTo := func(node int32) *partition.RemoteAppendResult {
		t.Helper()
		pid := actor.NewPID(fmt.Sprintf("%s:%d", host(int(node)), clusterPort), fmt.Sprintf("node/%d/appends", node))
		res, err := actors.Ask(sys, pid, &partition.RemoteAppend{
			Origin: actors.Origin{Node: 100, Incarnation: 1},
			Topic:  "remote", Partition: 0, LeaderEpoch: -1, Acks: -1, TimeoutMs: 10000,
			Records: batch,
		}, 30*time.Second)
		if err != nil {
			t.Fatalf("append to node %d: %v", node, err)
		}
		return res.(*partition.RemoteAppendResult)
	}
	first := appendTo(leader)
	if first.Err != nil || first.BaseOffset != 0 {
		t.Fatalf("append to the leader, node %d: offset %d, %v %s", leader, first.BaseOffset, first.Err, first.Message)
	}
	again := appendTo(leader)
	if again.Err != nil || again.BaseOffset != first.BaseOffset {
		t.Fatalf("the same batch again: offset %d, %v %s; want offset %d, no error", again.BaseOffset, again.Err, again.Message, first.BaseOffset)
	}
	if r := appendTo(other); r.Err != kerr.NotLeaderForPartition {
		t.Fatalf("append to node %d, not the leader: %v %s", other, r.Err, r.Message)
	}

	cl := c.client([]int{int(other)}, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"remote": {0: kgo.NewOffset().AtStart()}}))
	var got []*kgo.Record
	for len(got) < 1 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	// The end offset says nothing was appended twice.
	ends, err := adm.ListEndOffsets(ctx, "remote")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("remote", 0)
	if len(got) != 1 || string(got[0].Value) != "from inside the cluster" || got[0].ProducerID != iresp.ProducerID || end.Offset != 1 {
		t.Fatalf("partition remote-0 holds %d records (end offset %d): %+v", len(got), end.Offset, got)
	}
}
