package actors

import (
	"bytes"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestCutDropsEverySender: a cut link drops a message to the peer
// whatever sends it: an actor, the root context, a future, a system
// message (Stop), protoactor's remote itself. After the cut heals, the
// peer's echo has received only the ping sent since, and still runs.
func TestCutDropsEverySender(t *testing.T) {
	target := startPeer(t)
	sys, caller, got := startLocal(t, target)
	// The connection is up before the cut, so that the cut, not a
	// connection being made, is what the messages meet.
	sys.Root.Send(caller, &testPing{Seq: 0})
	if p := receive(t, got); p.Count != 1 {
		t.Fatalf("first ping: %+v", p)
	}
	local.links.Set(target.Address, LinkFault{Cut: true})
	before := Drops.Fault.Load()
	sys.Root.Send(caller, &testPing{Seq: 1})                                                   // from an actor, as itself
	sys.Root.Send(target, &testPing{Seq: 2})                                                   // from the root context
	sys.Root.RequestWithCustomSender(target, &testPing{Seq: 3}, caller)                        // from outside, for an actor
	_, err := sys.Root.RequestFuture(target, &testPing{Seq: 4}, 300*time.Millisecond).Result() // a future
	if !errors.Is(err, actor.ErrTimeout) {
		t.Errorf("a future across the cut: %v, want a timeout", err)
	}
	sys.Root.Stop(target)                                             // a system message
	local.remote.SendMessage(target, nil, &testPing{Seq: 5}, nil, -1) // protoactor's remote, past the PID's process
	// The last is dropped by the writer, at the stream; wait until it is.
	deadline := time.Now().Add(30 * time.Second)
	for Drops.Fault.Load()-before < 6 {
		if time.Now().After(deadline) {
			t.Fatalf("%d messages dropped by the cut, want 6", Drops.Fault.Load()-before)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case p := <-got:
		t.Fatalf("an answer came across the cut: %+v", p)
	default:
	}
	local.links.Heal()
	sys.Root.Send(caller, &testPing{Seq: 6})
	if p := receive(t, got); p.Seq != 6 || p.Count != 2 {
		t.Fatalf("after the cut healed: %+v, want ping 6 to be the echo's second", p)
	}
}

// TestOversizeRefusedOnce: a frame over MaxRemoteMessage is not sent, and
// is logged once per message type, not once per message.
func TestOversizeRefusedOnce(t *testing.T) {
	var log bytes.Buffer
	p := newPeers(nil, slog.New(slog.NewTextHandler(&log, nil)))
	sent := 0
	for range 3 {
		p.send("peer:1", &testPing{Data: make([]byte, MaxRemoteMessage)}, func(any) { sent++ })
	}
	p.send("peer:1", &testPing{Data: make([]byte, MaxRemoteMessage/2)}, func(any) { sent++ })
	if sent != 1 {
		t.Errorf("%d messages sent, want only the one within the limit", sent)
	}
	if n := strings.Count(log.String(), "larger than a frame may be"); n != 1 || !strings.Contains(log.String(), "type=testPing") {
		t.Errorf("logged %d times, want once, naming the type:\n%s", n, log.String())
	}
}

// TestPausedPeerQueueBounded: messages to a peer that stopped reading
// (SIGSTOP) fill its queue up to PeerQueueBytes; the rest are dropped,
// and this process's heap does not grow with what is sent.
func TestPausedPeerQueueBounded(t *testing.T) {
	target, proc := startPeerProcess(t)
	sys, caller, got := startLocal(t, target)
	sys.Root.Send(caller, &testPing{Seq: 0})
	receive(t, got)
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Signal(syscall.SIGCONT) })

	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap := ms.HeapAlloc
	before := Drops.QueueFull.Load()
	const n, size = 256, 1 << 20 // 256 MiB, each message its own bytes
	for i := range n {
		sys.Root.Send(target, &testPing{Seq: i, Data: make([]byte, size)})
	}
	queued := local.remote.QueuedBytes()[target.Address]
	dropped := Drops.QueueFull.Load() - before
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grew := int64(ms.HeapAlloc) - int64(heap)
	t.Logf("queued %d MiB, dropped %d of %d MiB messages, heap grew %d MiB", queued>>20, dropped, n, grew>>20)
	if queued > PeerQueueBytes {
		t.Errorf("%d bytes queued for the paused peer, over the bound of %d", queued, PeerQueueBytes)
	}
	if dropped == 0 {
		t.Error("nothing dropped")
	}
	// What is queued, one writer batch the writer holds, and slack.
	if limit := int64(PeerQueueBytes + RemoteBatch*size + 32<<20); grew > limit {
		t.Errorf("heap grew %d MiB sending %d MiB to a paused peer, over %d MiB", grew>>20, n*size>>20, limit>>20)
	}
}

// TestQueueFullLoggedOnce: a peer's full queue is logged when drops start
// and when its writer takes a message out, once each, with the count of
// what was dropped; a new writer (the endpoint terminated) starts empty.
func TestQueueFullLoggedOnce(t *testing.T) {
	var log bytes.Buffer
	p := newPeers(nil, slog.New(slog.NewTextHandler(&log, nil)))
	p.limit = 3 * 1100 // three of the frames below
	var queue []*queued
	send := func() {
		p.send("peer:1", &testPing{Data: make([]byte, 1000)}, func(m any) { queue = append(queue, m.(*queued)) })
	}
	for range 10 {
		send()
	}
	if len(queue) != 3 || p.QueuedBytes()["peer:1"] > p.limit {
		t.Fatalf("%d queued, %d bytes counted; want 3 within %d", len(queue), p.QueuedBytes()["peer:1"], p.limit)
	}
	queue[0].Serialize() // the writer takes one
	send()
	if len(queue) != 4 {
		t.Fatalf("%d queued after the writer took one, want 4", len(queue))
	}
	out := log.String()
	if strings.Count(out, "queue to a peer is full") != 1 || strings.Count(out, "drains again") != 1 || !strings.Contains(out, "dropped=7") {
		t.Errorf("logged:\n%s", out)
	}
	p.terminated("peer:1")
	if b := p.QueuedBytes()["peer:1"]; b != 0 {
		t.Errorf("a new writer's queue starts at %d bytes", b)
	}
}
