package controller

import (
	"fmt"
	"testing"

	"github.com/skeinlog/skein/controller/image"
)

// An observer keeps the metadata it fetched: crashed (only what it synced
// survives) and started again with every voter down, it publishes the
// image it had, and once the voters are back it fetches on from there.
// Its snapshots (SnapshotBytes 2000, taken here many times) keep the log
// short without losing anything.
func TestObserverKeepsItsMetadata(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3, 4)
	q.observers = map[int32]bool{4: true}
	q.run()
	q.waitRegistered()
	for i := range 30 {
		if r := q.create(1, fmt.Sprintf("kept-%d", i)); r.Err != nil {
			t.Fatalf("create: %v %s", r.Err, r.Message)
		}
	}
	q.waitFor(4, "30 topics", func(im *image.Image) bool { return len(im.Topics) == 30 })
	q.crash(4)
	for _, id := range []int32{1, 2, 3} {
		q.stop(id)
	}
	q.latest[4].Store(nil)
	q.start(4)
	q.waitFor(4, "the 30 topics from its disk", func(im *image.Image) bool { return len(im.Topics) == 30 })
	if s := q.status[4].Load(); s != nil && s.Leader >= 0 {
		t.Fatalf("the observer names leader %d with every voter down", s.Leader)
	}
	for _, id := range []int32{1, 2, 3} {
		q.start(id)
	}
	if r := q.create(1, "after"); r.Err != nil {
		t.Fatalf("create: %v %s", r.Err, r.Message)
	}
	q.waitFor(4, "the topic created after its restart", func(im *image.Image) bool { return im.Topic("after") != nil && len(im.Topics) == 31 })
}
