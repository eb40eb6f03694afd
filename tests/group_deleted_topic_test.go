package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/skeinlog/skein/coordinator"
)

// TestOffsetFetchAfterTopicDeletion: a group's commits on a topic that was
// then deleted do not break OffsetFetch v10, which names topics by id only:
// they are left out, and the group's other commits still come back.
func TestOffsetFetchAfterTopicDeletion(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	for _, topic := range []string{"kept", "doomed"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	offsets := kadm.Offsets{}
	offsets.AddOffset("kept", 0, 0, -1)
	offsets.AddOffset("doomed", 0, 0, -1)
	if err := adm.CommitAllOffsets(ctx, "g", offsets); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopic(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	// Raw, so that the test sees the v10 answer itself: kadm would hide a
	// topic with neither name nor id.
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, b.client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version < 10 {
		t.Fatalf("OffsetFetch v%d, want v10 (topic ids)", resp.Version)
	}
	for _, g := range resp.Groups {
		for _, gt := range g.Topics {
			if gt.TopicID == ([16]byte{}) {
				t.Fatalf("OffsetFetch v10 answered a topic without an id: %+v", gt)
			}
		}
	}
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := fetched.Error(); err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("kept", 0); !ok {
		t.Fatalf("the commit on the kept topic is missing: %v", fetched)
	}
	if _, ok := fetched.Lookup("doomed", 0); ok {
		t.Fatalf("a commit on the deleted topic came back: %v", fetched)
	}
}

// TestTopicDeletionDeletesGroupOffsets: deleting a topic deletes every
// group's committed offsets on it, as Kafka does, so that a topic created
// again under the same name starts with none, whatever OffsetFetch version
// asks (v8 by name, v10 by id). That holds for a group whose coordinator
// actor is loaded and for one known only from __consumer_offsets (it
// committed before a restart), and stays so after another restart.
func TestTopicDeletionDeletesGroupOffsets(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	adm := b.admin()
	for topic, partitions := range map[string]int32{"reborn": 2, "kept": 1} {
		if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// Both groups in the same __consumer_offsets partition: the warm
	// group's commit after the restart proves the partition loaded, so
	// that the cold group's offsets are there to be found when the topic
	// goes.
	cold, warm := "cold", ""
	for i := 0; warm == ""; i++ {
		if g := fmt.Sprintf("warm-%d", i); coordinator.PartitionFor(g, b.cfg.OffsetsTopicNumPartitions) ==
			coordinator.PartitionFor(cold, b.cfg.OffsetsTopicNumPartitions) {
			warm = g
		}
	}
	commit := func(adm *kadm.Client, group string, at int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.AddOffset("reborn", 0, at, -1)
		os.AddOffset("reborn", 1, at+1, -1)
		os.AddOffset("kept", 0, at+2, -1)
		if err := adm.CommitAllOffsets(ctx, group, os); err != nil {
			t.Fatal(err)
		}
	}
	commit(adm, cold, 10)
	b.restart() // the cold group has no actor from here on
	adm = b.admin()
	commit(adm, warm, 20)

	if _, err := adm.DeleteTopic(ctx, "reborn"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "reborn"); err != nil {
		t.Fatal(err)
	}
	// The tombstones are written after DeleteTopics is answered.
	v8 := offsetFetchV8(b)
	eventually(t, "the offsets on the deleted topic to go", func() bool {
		for _, g := range []string{cold, warm} {
			for p, at := range fetchV8(t, ctx, v8, g) {
				if p.Topic == "reborn" && at >= 0 {
					return false
				}
			}
		}
		return true
	})
	check := func(when string, adm *kadm.Client, v8 *kgo.Client) {
		t.Helper()
		for g, keptAt := range map[string]int64{cold: 12, warm: 22} {
			got := fetchV8(t, ctx, v8, g)
			for p := range int32(2) {
				if at := got[kadm.Offset{Topic: "reborn", Partition: p}]; at != -1 {
					t.Errorf("%s: %s: OffsetFetch v8 reborn/%d = %d, want -1 (none)", when, g, p, at)
				}
			}
			if at := got[kadm.Offset{Topic: "kept", Partition: 0}]; at != keptAt {
				t.Errorf("%s: %s: OffsetFetch v8 kept/0 = %d, want %d", when, g, at, keptAt)
			}
			fetched, err := adm.FetchOffsets(ctx, g)
			if err != nil {
				t.Fatal(err)
			}
			if err := fetched.Error(); err != nil {
				t.Fatal(err)
			}
			fetched.Each(func(o kadm.OffsetResponse) {
				if o.Topic == "reborn" {
					t.Errorf("%s: %s: FetchOffsets still has reborn/%d at %d", when, g, o.Partition, o.At)
				}
			})
			if o, ok := fetched.Lookup("kept", 0); !ok || o.At != keptAt {
				t.Errorf("%s: %s: FetchOffsets kept/0 = %+v, want %d", when, g, o, keptAt)
			}
		}
	}
	check("after the deletion", adm, v8)
	b.restart()
	check("after a restart", b.admin(), offsetFetchV8(b))
}

// offsetFetchV8 returns a client that sends OffsetFetch at most at v8,
// which names topics (v10 names them by id).
func offsetFetchV8(b *broker) *kgo.Client {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 8)
	return b.client(kgo.MaxVersions(versions))
}

// fetchV8 returns a group's committed offsets on the topics reborn (two
// partitions) and kept (one), asked by name with OffsetFetch v8; -1 is
// none. The map's keys carry only a topic and a partition.
func fetchV8(t *testing.T, ctx context.Context, cl *kgo.Client, group string) map[kadm.Offset]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	for topic, partitions := range map[string][]int32{"reborn": {0, 1}, "kept": {0}} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, partitions
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 8 {
		t.Fatalf("OffsetFetch v%d, want v8", resp.Version)
	}
	out := map[kadm.Offset]int64{}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			t.Fatalf("OffsetFetch v8 %s: %v", group, err)
		}
		for _, gt := range g.Topics {
			for _, gp := range gt.Partitions {
				if err := kerr.ErrorForCode(gp.ErrorCode); err != nil {
					t.Fatalf("OffsetFetch v8 %s %s/%d: %v", group, gt.Topic, gp.Partition, err)
				}
				out[kadm.Offset{Topic: gt.Topic, Partition: gp.Partition}] = gp.Offset
			}
		}
	}
	return out
}
