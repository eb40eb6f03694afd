package tests

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestGroupReloadAmongManyGroups: many groups share the one
// __consumer_offsets partition; a group's coordinator actor restarted by a
// panic, and the node restarted, each give every group exactly its own
// state back: its committed offsets, no offsets for deleted groups (nor a
// listing), a transaction's committed offsets applied, an aborted one's
// dropped and an open one's still pending, and the live members of a
// classic and a KIP-848 group. ListGroups lists exactly the live groups,
// those no client used since the start included.
func TestGroupReloadAmongManyGroups(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.OffsetsTopicNumPartitions = 1
		c.GroupMinSessionTimeoutMs = 500
		c.GroupConsumerSessionTimeoutMs, c.GroupConsumerMinSessionTimeoutMs = 2000, 1000
		c.GroupConsumerHeartbeatIntervalMs, c.GroupConsumerMinHeartbeatIntervalMs = 200, 100
	})
	ctx := ctxFor(t)
	adm := b.admin()
	const topic, groups, deleted = "many", 200, 40
	mustCreate(t, ctx, adm, topic, 3, nil)
	commit := func(group string, p int32, at int64) {
		t.Helper()
		var o kadm.Offsets
		o.AddOffset(topic, p, at, -1)
		if r, err := adm.CommitOffsets(ctx, group, o); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", group, err, r.Error())
		}
	}
	for i := range groups {
		g := fmt.Sprintf("many-%d", i)
		commit(g, int32(i%3), int64(i))
		commit(g, int32(i%3), int64(i+1000)) // the later commit wins
	}
	var gone []string
	for i := range deleted {
		gone = append(gone, fmt.Sprintf("many-%d", i))
	}
	if r, err := adm.DeleteGroups(ctx, gone...); err != nil || r.Error() != nil {
		t.Fatalf("DeleteGroups: %v %v", err, r.Error())
	}

	// Transactional offset commits: committed, aborted, still open.
	cl := b.client(tv1())
	txnCommit := func(id, group string, at int64, end *bool) {
		t.Helper()
		commit(group, 0, 1) // before the transaction
		pid := beginTxnOffsets(t, ctx, cl, id, group)
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = id, group, pid.ProducerID, pid.ProducerEpoch, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, at
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := coordinatorRequest[*kmsg.TxnOffsetCommitResponse](t, ctx, cl, req)
		if err := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); err != nil {
			t.Fatalf("TxnOffsetCommit: %v", err)
		}
		if end == nil {
			return
		}
		ereq := kmsg.NewPtrEndTxnRequest()
		ereq.TransactionalID, ereq.ProducerID, ereq.ProducerEpoch, ereq.Commit = id, pid.ProducerID, pid.ProducerEpoch, *end
		if err := kerr.ErrorForCode(coordinatorRequest[*kmsg.EndTxnResponse](t, ctx, cl, ereq).ErrorCode); err != nil {
			t.Fatalf("EndTxn: %v", err)
		}
	}
	yes, no := true, false
	txnCommit("many-txn-c", "txn-committed", 50, &yes)
	txnCommit("many-txn-a", "txn-aborted", 60, &no)
	txnCommit("many-txn-o", "txn-open", 70, nil)

	// Live members: a classic group and a consumer-protocol one.
	prod := b.client()
	produceN(t, prod, topic, 0, 30)
	l := newGroupLedger()
	classic := startMember(t, b, l, "c1", "live-classic", topic)
	defer classic.close()
	next := start848Member(t, b, l, &ownership{owner: map[int32]string{}}, "n1", "live-848", topic)
	defer next.close()
	stable := func(group string) {
		t.Helper()
		eventually(t, group+" stable with its member", func() bool {
			d, err := adm.DescribeGroups(ctx, group)
			if err == nil && d[group].State == "Stable" && len(d[group].Members) == 1 {
				return true
			}
			cd, err := describeConsumerGroup(ctx, cl, group)
			return err == nil && cd.State == "Stable" && len(cd.Members) == 1
		})
	}
	stable("live-classic")
	stable("live-848")

	want := map[string]bool{"txn-committed": true, "txn-aborted": true, "txn-open": true, "live-classic": true, "live-848": true}
	for i := deleted; i < groups; i++ {
		want[fmt.Sprintf("many-%d", i)] = true
	}
	check := func(when string) {
		t.Helper()
		for i := range groups {
			g := fmt.Sprintf("many-%d", i)
			o, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				t.Fatalf("%s: FetchOffsets %s: %v", when, g, err)
			}
			c, ok := o.Lookup(topic, int32(i%3))
			switch {
			case i < deleted && ok && c.At >= 0:
				t.Errorf("%s: deleted group %s has offset %d", when, g, c.At)
			case i >= deleted && (!ok || c.At != int64(i+1000)):
				t.Errorf("%s: group %s offset = %+v %v, want %d", when, g, c, ok, i+1000)
			}
		}
		for g, at := range map[string]int64{"txn-committed": 50, "txn-aborted": 1, "txn-open": 1} {
			o, err := adm.FetchOffsets(ctx, g)
			if c, ok := o.Lookup(topic, 0); err != nil || !ok || c.At != at {
				t.Errorf("%s: %s offset = %+v %v %v, want %d", when, g, c, ok, err, at)
			}
		}
		if err := fetchStable(ctx, cl, "txn-open", topic); err != kerr.UnstableOffsetCommit {
			t.Errorf("%s: stable fetch of the open transaction's group: %v, want UNSTABLE_OFFSET_COMMIT", when, err)
		}
		if err := fetchStable(ctx, cl, "txn-committed", topic); err != nil {
			t.Errorf("%s: stable fetch of the committed transaction's group: %v", when, err)
		}
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatalf("%s: ListGroups: %v", when, err)
		}
		var got, exp []string
		for _, g := range listed.Groups() {
			if g != "" {
				got = append(got, g)
			}
		}
		for g := range want {
			exp = append(exp, g)
		}
		slices.Sort(got)
		slices.Sort(exp)
		if !slices.Equal(got, exp) {
			t.Errorf("%s: ListGroups lists %d groups, want %d; extra %v, missing %v", when, len(got), len(exp), diff(got, exp), diff(exp, got))
		}
		stable("live-classic")
		stable("live-848")
	}
	check("before any restart")

	// A client cannot write the coordinators' records: only this node's
	// coordinators write __consumer_offsets, whose index follows them.
	forged := kmsg.NewOffsetCommitKey()
	forged.Version, forged.Group, forged.Topic, forged.Partition = 1, "many-100", topic, 1
	val := kmsg.NewOffsetCommitValue()
	val.Version, val.Offset = 3, 999999
	err := prod.ProduceSync(ctx, &kgo.Record{Topic: "__consumer_offsets", Partition: 0, Key: forged.AppendTo(nil), Value: val.AppendTo(nil)}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Errorf("produce to __consumer_offsets: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	for _, g := range []string{"many-77", "live-classic", "live-848", "txn-open", "txn-committed", "txn-aborted"} {
		b.injectFault(`{"actor": "node/1/groups/` + g + `", "kind": "panic", "after": true, "count": 1}`)
		eventually(t, "the coordinator of "+g+" restarted", func() bool {
			_, _ = adm.FetchOffsets(ctx, g) // the message it panics after
			a := b.actors()["node/1/groups/"+g]
			return a != nil && a.Restarts > 0
		})
	}
	check("after coordinator restarts")

	classic.close()
	next.close()
	b.restart()
	classicAgain := startMember(t, b, l, "c2", "live-classic", topic)
	defer classicAgain.close()
	nextAgain := start848Member(t, b, l, &ownership{owner: map[int32]string{}}, "n2", "live-848", topic)
	defer nextAgain.close()
	check("after a node restart")
}

// fetchStable is OffsetFetch of a group's partition 0 with RequireStable.
func fetchStable(ctx context.Context, cl *kgo.Client, group, topic string) error {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Groups) != 1 {
		return fmt.Errorf("%d groups answered", len(resp.Groups))
	}
	if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
		return err
	}
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// describeConsumerGroup is ConsumerGroupDescribe of one group.
func describeConsumerGroup(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	if len(resp.Groups) != 1 {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, fmt.Errorf("%d groups answered", len(resp.Groups))
	}
	return resp.Groups[0], kerr.ErrorForCode(resp.Groups[0].ErrorCode)
}

// diff returns what a has that b has not (both sorted).
func diff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			out = append(out, s)
		}
	}
	return out
}
