package tests

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
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
