package controller

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
)

// A raft message over a chunk goes in parts, which the receiver puts
// back together; a part lost drops the message, and the next one in
// parts is received whole.
func TestRaftMessageInParts(t *testing.T) {
	c := &Controller{assembling: map[int32]*assembly{}, committed: image.Empty()}
	big := bytes.Repeat([]byte("snapshot"), (3*chunkBytes+chunkBytes/2)/8)
	parts := c.raftMessages(big)
	if len(parts) != 4 {
		t.Fatalf("%d parts, want 4", len(parts))
	}
	for _, p := range parts {
		if len(p.Data) > chunkBytes {
			t.Fatalf("a part of %d bytes", len(p.Data))
		}
	}
	// One lost: nothing comes out of the rest.
	for i, p := range parts {
		if i == 2 {
			continue
		}
		if _, whole := c.assemble(p); whole {
			t.Fatal("a message with a part lost came out whole")
		}
	}
	parts = c.raftMessages(big)
	var got []byte
	for i, p := range parts {
		data, whole := c.assemble(p)
		if whole != (i == len(parts)-1) {
			t.Fatalf("part %d: whole %v", i, whole)
		}
		got = data
	}
	if !bytes.Equal(got, big) {
		t.Fatal("the parts put together differ from the message")
	}
	if small, whole := c.assemble(c.raftMessages([]byte("x"))[0]); !whole || string(small) != "x" {
		t.Fatal("a small message did not pass whole")
	}
}

// The metadata of 100,000 partitions (bigPartitions), in five entries,
// reaches a voter that was down (raft's snapshot), an observer that
// follows (the entries, in pieces) and one that starts late (the
// snapshot, in pieces), and no message between controllers is larger than
// a remoting frame may be.
func TestBigSnapshotsInChunks(t *testing.T) {
	q := prepareQuorum(t, 1, 2, 3, 4, 5)
	q.observers = map[int32]bool{4: true, 5: true}
	var largest atomic.Int64
	// Every message a controller sends, as remoting would encode it.
	q.middleware = func(next actor.SenderFunc) actor.SenderFunc {
		return func(ctx actor.SenderContext, target *actor.PID, env *actor.MessageEnvelope) {
			if rs, ok := env.Message.(remote.RootSerializable); ok {
				if f, err := rs.Serialize(); err == nil {
					fr := f.(*actors.Frame)
					if n := int64(len(fr.Body) + len(fr.Raw)); n > largest.Load() {
						largest.Store(n)
					}
				}
			}
			next(ctx, target, env)
		}
	}
	// No broker is fenced while its node is down: fencing changes every
	// partition it holds, one record each, which is not under test.
	q.edit = func(cfg *Config) { cfg.SessionTimeout = time.Hour }
	t.Cleanup(func() {
		for id := range q.pids {
			q.stop(id)
		}
	})
	for _, id := range []int32{1, 2, 3, 4} {
		q.start(id)
	}
	q.waitFor(1, "the voters registered", func(im *image.Image) bool { return len(im.Brokers) == 4 })
	q.stop(3) // it catches up from a snapshot when it is back
	const topics, per = 5, bigPartitions / 5
	for i := range topics {
		r := q.ask(1, &CreateTopics{Topics: []NewTopic{{Name: fmt.Sprintf("big-%d", i), NumPartitions: per, ReplicationFactor: 2}}}).(*CreateTopicsResult).Topics[0]
		if r.Err != nil {
			t.Fatalf("create: %v %s", r.Err, r.Message)
		}
	}
	q.start(3)
	q.start(5)
	for _, id := range []int32{3, 4, 5} {
		q.waitFor(id, "every partition", func(im *image.Image) bool { return len(im.Topics) == topics })
	}
	t.Logf("largest message between controllers: %d bytes", largest.Load())
	if largest.Load() > actors.MaxRemoteMessage {
		t.Fatalf("a message of %d bytes, over a frame's %d", largest.Load(), actors.MaxRemoteMessage)
	}
}
