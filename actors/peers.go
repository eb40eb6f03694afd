package actors

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
)

// Every message to another node leaves through two doors, and peers
// guards both:
//
//   - the Process that protoactor resolves for a PID on another node
//     (StartRemote wraps the remote's address resolver), whoever sends:
//     an actor, the root context, a future, a Respond. There the link's
//     faults are drawn per message (drop, delay), the message is encoded
//     at once, a frame over MaxRemoteMessage is refused, and the peer's
//     queue is bounded;
//   - the gRPC stream this node dialled to the peer (a client
//     interceptor), the one place every message to it passes, protoactor's
//     own (watch, terminate) included: a cut link drops every batch.
//
// A fault is on what this node sends. What it receives is the sender's
// to fault, so that a one-way cut (set on one node) stays one way; `skein
// chaos cut` sets the fault on both nodes.
//
// The queue to a peer is protoactor's endpoint writer mailbox, which is
// unbounded: a peer that is slow, paused or unreachable (the writer spends
// up to five connect attempts of 20 s before it gives up) would grow it
// without bound. peers counts the bytes of the frames queued for each peer
// and drops a message that would take them over PeerQueueBytes. Dropping
// is the policy for every message type, because every protocol on
// remoting already survives a lost message (remoting is at-most-once):
// raft retransmits and resends snapshots (RaftMessage), an observer
// fetches again after a second (MetadataFetch, MetadataEntries), heartbeats
// recur (BrokerHeartbeat), and every request (Forward, DescribeQuorum,
// RemoteAppend, RemoteMarker, Verify) is answered by its target or
// timed out and retried by its sender, so a lost answer is a lost request.
// Back-pressure is no choice here: a sender blocked on one peer would be
// an actor that stops serving everyone else, and the slowest node would
// set the pace of the cluster.
//
// What a node receives goes into its actors' mailboxes, which take what
// comes (protoactor's endpoint reader must not block: it would stall every
// message from that peer). They are bounded by the protocols, not by a
// cap: each is pull-based, so a peer has at most a window of messages out
// to a node (raft's in-flight appends, one observer fetch, one heartbeat
// an interval, the requests its own clients have waiting), and the
// sender's queue bounds the rest. Replication's records do not cross
// remoting at all: followers fetch them over the Kafka listener.
//
// Messages a delay fault holds (Links) wait outside the queue, in the
// link's delay line, for as long as the fault says.

// PeerQueueBytes bounds the frames queued for one peer (besides the one
// batch its writer is sending): sixteen of the largest frames, or the
// chunks of a 32 MiB raft snapshot sent at once (100,000 partitions make
// about 10 MiB). A snapshot larger than that goes whole only as fast as
// the writer drains the queue while the chunks are queued.
const PeerQueueBytes = 32 << 20

type peers struct {
	links *Links
	limit int64
	log   *slog.Logger

	mu     sync.RWMutex
	queues map[string]*peerLink

	oversize sync.Map // type id → true, once its first oversize frame is logged
}

// peerLink is what peers keeps per peer address.
type peerLink struct {
	queue    atomic.Pointer[peerQueue]
	dropping atomic.Bool   // the queue is full: drops under way
	dropped  atomic.Uint64 // messages dropped because the queue was full
}

// peerQueue counts the bytes queued in one endpoint writer. A writer that
// stops (its peer's connection failed) drops what it holds without a
// word, so each writer has its own count: a new one starts at zero when
// protoactor says the endpoint terminated.
type peerQueue struct{ bytes atomic.Int64 }

// RemoteDrops counts the messages to other nodes that were not sent:
// because their frame exceeded MaxRemoteMessage, because the peer's queue
// was full, or because a link fault (Links) dropped them.
type RemoteDrops struct{ Oversize, QueueFull, Fault atomic.Uint64 }

// Drops counts this process's dropped remote messages, for /metrics.
var Drops RemoteDrops

func newPeers(links *Links, log *slog.Logger) *peers {
	if links == nil {
		links = NewLinks()
	}
	return &peers{links: links, limit: PeerQueueBytes, log: log, queues: map[string]*peerLink{}}
}

func (p *peers) link(addr string) *peerLink {
	p.mu.RLock()
	l := p.queues[addr]
	p.mu.RUnlock()
	if l != nil {
		return l
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l = p.queues[addr]; l == nil {
		l = &peerLink{}
		l.queue.Store(&peerQueue{})
		p.queues[addr] = l
	}
	return l
}

// terminated starts a new count for addr's next writer. NB: it runs just
// after protoactor's own handler of the event has removed the endpoint: a
// message sent in between, to the new writer, was counted in the old
// count, and the new one misses it. The other order would count in the
// new count a message that the old writer drops, for ever.
func (p *peers) terminated(addr string) {
	p.link(addr).queue.Store(&peerQueue{})
}

// QueuedBytes returns the bytes of frames queued for each peer.
func (p *peers) QueuedBytes() map[string]int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]int64, len(p.queues))
	for addr, l := range p.queues {
		out[addr] = l.queue.Load().bytes.Load()
	}
	return out
}

// resolver wraps protoactor's remote address resolver.
func (p *peers) resolver(next actor.AddressResolver) actor.AddressResolver {
	return func(pid *actor.PID) (actor.Process, bool) {
		proc, ok := next(pid)
		if !ok {
			return proc, ok
		}
		return &peerProcess{next: proc, addr: pid.Address, p: p}, true
	}
}

// peerProcess is the Process of every PID on another node.
type peerProcess struct {
	next actor.Process
	addr string
	p    *peers
}

func (pp *peerProcess) SendUserMessage(pid *actor.PID, message any) {
	pp.p.fault(pp.addr, func() { pp.p.send(pp.addr, message, func(m any) { pp.next.SendUserMessage(pid, m) }) })
}

func (pp *peerProcess) SendSystemMessage(pid *actor.PID, message any) {
	switch message.(type) {
	case *actor.Watch, *actor.Unwatch:
		// Bookkeeping in this node's endpoint watcher; what it sends on
		// passes the stream's door.
		pp.next.SendSystemMessage(pid, message)
		return
	}
	pp.p.fault(pp.addr, func() { pp.next.SendSystemMessage(pid, message) })
}

func (pp *peerProcess) Stop(pid *actor.PID) {
	pp.p.fault(pp.addr, func() { pp.next.Stop(pid) })
}

// fault applies the link's fault to one message, which send delivers.
func (p *peers) fault(addr string, send func()) {
	st := p.links.state(addr)
	if st == nil {
		send()
		return
	}
	switch drop, d := st.fault.draw(); {
	case drop:
		Drops.Fault.Add(1)
	case d > 0:
		st.line.push(time.Now().Add(d), send)
	default:
		send()
	}
}

// send encodes a registered message, refuses it if its frame is over
// MaxRemoteMessage or the peer's queue is full, and passes it to
// protoactor's remote process (deliver) as a *queued. Other messages
// (protoactor's own) pass as they are.
func (p *peers) send(addr string, message any, deliver func(any)) {
	env, _ := message.(*actor.MessageEnvelope)
	msg := message
	if env != nil {
		msg = env.Message
	}
	rs, ok := msg.(remote.RootSerializable)
	if !ok {
		deliver(message)
		return
	}
	ser, err := rs.Serialize()
	if err != nil {
		p.log.Error("remoting: a message cannot be encoded; not sent", slog.String("address", addr), slog.Any("error", err))
		return
	}
	f, ok := ser.(*Frame)
	if !ok {
		deliver(message)
		return
	}
	size := int64(len(f.Body) + len(f.Raw))
	if size > MaxRemoteMessage {
		Drops.Oversize.Add(1)
		if _, logged := p.oversize.LoadOrStore(f.TypeId, true); !logged {
			p.log.Error("remoting: a message is larger than a frame may be; not sent (logged once per message type)",
				slog.String("type", typeName(f.TypeId)), slog.Int64("bytes", size), slog.Int("limit", MaxRemoteMessage), slog.String("address", addr))
		}
		return
	}
	l := p.link(addr)
	q := l.queue.Load()
	if q.bytes.Add(size) > p.limit {
		q.bytes.Add(-size)
		Drops.QueueFull.Add(1)
		l.dropped.Add(1)
		if l.dropping.CompareAndSwap(false, true) {
			p.log.Warn("remoting: the queue to a peer is full; dropping messages to it until it drains (their protocols retry)",
				slog.String("address", addr), slog.Int64("limit_bytes", p.limit))
		}
		return
	}
	if l.dropping.CompareAndSwap(true, false) {
		p.log.Warn("remoting: the queue to a peer drains again", slog.String("address", addr), slog.Uint64("dropped", l.dropped.Swap(0)))
	}
	out := &queued{frame: f, queue: q, size: size}
	if env == nil {
		deliver(out)
		return
	}
	cp := *env
	cp.Message = out
	deliver(&cp)
}

// queued is an encoded message in a peer's queue: the writer takes it out
// by calling Serialize, which uncounts it.
type queued struct {
	frame *Frame
	queue *peerQueue
	size  int64
}

func (q *queued) Serialize() (Serialized, error) {
	q.queue.bytes.Add(-q.size)
	countSent(q.frame.TypeId)
	return q.frame, nil
}

// The stream's door: a cut link drops every batch sent.

// clientStream is the client interceptor of the connections this node
// dials (its endpoint writers'): the dial target is the peer's address.
func (p *peers) clientStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return cs, err
	}
	return &outbound{ClientStream: cs, p: p, peer: cc.Target()}, nil
}

type outbound struct {
	grpc.ClientStream
	p    *peers
	peer string
}

func (o *outbound) SendMsg(m any) error {
	if rm, ok := m.(*remote.RemoteMessage); ok {
		if b := rm.GetMessageBatch(); b != nil && o.p.links.cut(o.peer) {
			Drops.Fault.Add(uint64(len(b.Envelopes)))
			return nil
		}
	}
	return o.ClientStream.SendMsg(m)
}
