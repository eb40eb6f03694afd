package controller

import (
	"cmp"
	"crypto/rand"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vmihailenco/msgpack/v5"
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// Config configures the controller actor.
type Config struct {
	NodeID int32
	// Incarnation tells this run of the node from earlier ones.
	Incarnation uint64
	// Broker is this node's broker, registered with the cluster: the
	// host and port it advertises to clients, its rack and its remoting
	// address (its id and incarnation are NodeID's and Incarnation's).
	Broker image.Broker
	// NoBroker is a controller-only node (process.roles=controller): it
	// neither registers nor heartbeats a broker, so that it is never
	// listed to clients, given partitions or made a coordinator; Broker
	// is unused.
	NoBroker bool
	// Peers are the other voters' controllers, by node id; none for a
	// one-node cluster.
	Peers map[int32]*actor.PID
	// Observer makes this controller a follower of the committed log
	// that is not a voter (a broker-only node): it fetches the entries
	// from the voters (observer.go) instead of running a raft member.
	Observer bool
	// Dir is the metadata log's directory.
	Dir   string
	FS    vfs.FS
	Clock clock.Clock
	// Node is the node's configuration: defaults for new topics and the
	// broker-level topic config defaults used to validate configs.
	Node   configs.Node
	Logger zerolog.Logger
	// Publish is called on the controller's goroutine with every new
	// image once the image names a cluster. It must not block.
	Publish func(*image.Image)
	// Quorum, if set, is called on the controller's goroutine whenever
	// its Status changes. It must not block.
	Quorum func(Status)
	// Tick is raft's clock: a follower campaigns after 10 to 20 ticks
	// without a leader, a leader heartbeats every tick. Default 100 ms.
	Tick time.Duration
	// CommandTimeout bounds how long a command waits for the quorum
	// before it is answered REQUEST_TIMED_OUT. Default 20 s.
	CommandTimeout time.Duration
	// HeartbeatInterval is how often this node's broker heartbeats the
	// active controller (broker.heartbeat.interval.ms); SessionTimeout
	// how long the active controller waits for one before it fences the
	// broker (broker.session.timeout.ms). Defaults 2 s and 9 s.
	HeartbeatInterval, SessionTimeout time.Duration
	// Refused, if set, is called when this node's broker cannot register
	// because another live node has its id: the node should stop.
	Refused func(error)
	// SnapshotBytes is how many bytes of entries are applied between
	// snapshots, which compact the log. Default 20 MiB.
	SnapshotBytes int
}

// Status is what a controller knows of the quorum.
type Status struct {
	// Leader is the active controller's node id, -1 when none is known.
	Leader int32
	Term   uint64
	// Commit is the index of the newest entry known committed, Applied
	// the newest applied here.
	Commit, Applied uint64
	// HeartbeatsSent counts this node's broker heartbeats,
	// HeartbeatsReceived those this controller took while active.
	HeartbeatsSent, HeartbeatsReceived uint64
	// NoLeaderSince is when this node last knew an active controller (or
	// started), while it knows none: the image it holds is as of then
	// (brokers fenced or live, leaders, ISRs). Zero while Leader is known.
	NoLeaderSince time.Time
}

// NoLeaderHint is what a node without an active controller says of it,
// in answers and logs: the commonest cause and what to check.
const NoLeaderHint = "is a majority of controller.quorum.voters running and reachable?"

// ProducerIDBlockSize is how many producer ids one AllocateProducerIDs hands out.
const ProducerIDBlockSize = 1000

// maxAnswered is how many recent answers every controller keeps, so that
// a forwarded command retried after its entry committed gets its answer
// instead of being decided again.
const maxAnswered = 1000

// retryInterval is how long a forwarded command waits for an answer
// before it is sent again (remoting is at-most-once).
const retryInterval = time.Second

// Controller is a node's seat in the controller quorum. It drives a raft
// member (member.go): ticks come from a timer, raft messages from the
// other voters over remoting, and every entry committed is applied to the
// image, which is then published. The member that leads raft is the
// active controller: it decides commands against its image plus what it
// has proposed, and proposes each command's records and result as one
// entry. Commands given to any other controller are forwarded to it,
// with a request id, and retried until answered or timed out.
//
// Restart: the member reloads its snapshot, entries and hard state from
// disk, and the image is rebuilt as raft hands the committed entries back.
type Controller struct {
	cfg  Config
	self actor.Context // valid within Receive only

	disk *logDisk
	m    *member
	gen  uint64 // this instance's tick chain

	committed *image.Image // every committed entry applied
	published *image.Image // the last image published
	applied   uint64       // the index of the last entry applied
	answered  []answer     // the last maxAnswered results, oldest first
	unsnapped int          // bytes of entries applied since the last snapshot

	// Leadership, as of the last ready.
	leader, term uint64
	// leaderHeard is when an observer last fetched from a voter that
	// named the active controller.
	leaderHeard time.Time
	// Active-controller state: head is committed plus every entry this
	// leader proposed; decisions are made against it. caughtUp is set
	// once the entries of earlier terms are applied.
	head     *image.Image
	caughtUp bool
	termFrom uint64 // the index of this leader's first entry
	proposed map[RequestID]bool
	// refusals are the commands decided without records while some of
	// ours were proposed, waiting for the next ready to learn the index
	// their answer waits for (see pending.held).
	refusals []refusal

	status Status // as last reported
	// flushing is set while a flush is on its way.
	flushing bool
	// An observer's fetch: under way since fetchSent, to the voter
	// fetchTurn picks when the active controller does not answer.
	fetching  bool
	fetchSent time.Time
	fetchTurn int
	// observers are the broker-only nodes that fetched from this leader.
	observers map[int32]*observed
	// foreign are the voters heard from with another cluster id, and it.
	foreign map[int32]string
	// chunkSeq numbers the raft messages sent in parts; assembling are
	// those being received, by sender (chunks.go).
	chunkSeq   uint64
	assembling map[int32]*assembly
	// served is the snapshot a voter last encoded for observers, and
	// pulling what an observer receives in pieces (observer.go).
	served struct {
		index uint64
		bytes []byte
	}
	pulling pulling
	// heartbeatsSent and heartbeatsReceived count for Status.
	heartbeatsSent, heartbeatsReceived uint64
	// At the leader, when each voter was last heard from and last
	// caught up (DescribeQuorum).
	peerHeard, peerCaughtUp map[int32]time.Time

	// Broker liveness: heard and activeSince are the active
	// controller's, the time of each broker's last heartbeat (or
	// registration) here and when it became active; lastBeat is when
	// this node's broker last heartbeat; refusedSince when its
	// registration was first refused (zero when it was not).
	heard        map[int32]time.Time
	activeSince  time.Time
	lastBeat     time.Time
	refusedSince time.Time
	// leaving is set once the node shuts down (ShutDown).
	leaving bool
	// lastLeaderCheck is when the active controller last ran the periodic
	// elections (checkLeaders).
	lastLeaderCheck time.Time

	// outbox holds the commands taken by this controller and not yet
	// answered.
	outbox map[RequestID]*pending
	seq    uint64

	// role is the role and term ActorRole reports, published by start
	// (an observer) and by follow (a voter, after each ready); nil until
	// then.
	role atomic.Pointer[roleView]
}

// roleView is what ActorRole reports: immutable once published.
type roleView struct {
	role  string
	epoch int32
}

// ActorRole implements actors.Roled: a voter's raft role ("leader",
// "follower", or "candidate", pre-vote included) and its term (as an
// int32, capped), an observer's "observer". Safe for concurrent use: it
// loads what the actor published.
func (c *Controller) ActorRole() (role string, epoch int32) {
	if v := c.role.Load(); v != nil {
		return v.role, v.epoch
	}
	return "", 0
}

// showRole publishes v for ActorRole, when it changed.
func (c *Controller) showRole(v roleView) {
	if cur := c.role.Load(); cur == nil || *cur != v {
		c.role.Store(&v)
	}
}

// raftRole names a raft state for ActorRole.
func raftRole(st raft.StateType) string {
	switch st {
	case raft.StateLeader:
		return "leader"
	case raft.StateCandidate, raft.StatePreCandidate:
		return "candidate"
	}
	return "follower"
}

type pending struct {
	cmd      command
	reply    *actor.PID // nil for the controller's own commands
	deadline time.Time
	sent     time.Time // last forwarded
	// A command decided without records (refused, or nothing to do) was
	// decided against what the active controller had proposed, maybe not
	// yet committed: its result is held here until this node has applied
	// the entries up to after, as Kafka's controller defers such answers
	// to its highest pending offset. Otherwise a client told
	// TOPIC_ALREADY_EXISTS could find no such topic in this node's image.
	held  []byte
	after uint64
}

// refusal is a command decided without records, not yet replied to.
type refusal struct {
	id     RequestID
	reply  *actor.PID
	result []byte
}

// answer is a command's result as committed.
type answer struct {
	Request RequestID   `msgpack:"req"`
	Kind    commandKind `msgpack:"kind"`
	Result  []byte      `msgpack:"res"`
}

// tick is the raft timer, from this instance's tick chain.
type tick struct{ gen uint64 }

// flush makes the controller handle what raft has ready after the
// commands queued before it: their entries are persisted together, with
// one sync (group commit).
type flush struct{}

// flushLater sends flush, unless one is on its way.
func (c *Controller) flushLater() {
	if !c.flushing {
		c.flushing = true
		c.self.Send(c.self.Self(), &flush{})
	}
}

// Props returns the actor's props; spawn it as "controller" under the node.
func Props(cfg Config) *actor.Props {
	cfg.Broker.ID, cfg.Broker.Incarnation = cfg.NodeID, cfg.Incarnation
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.CommandTimeout <= 0 {
		cfg.CommandTimeout = 20 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 2 * time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.SnapshotBytes <= 0 {
		cfg.SnapshotBytes = 20 << 20
	}
	return actor.PropsFromProducer(func() actor.Actor { return &Controller{cfg: cfg} })
}

// Receive handles the controller's messages.
func (c *Controller) Receive(ctx actor.Context) {
	c.self = ctx
	defer func() { c.self = nil }()
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if err := c.start(); err != nil {
			// Without its log the controller cannot serve; panicking hands
			// the decision to the supervisor, which restarts with backoff.
			panic(fmt.Errorf("controller: start: %w", err))
		}
		c.scheduleTick()
	case *actor.Stopping, *actor.Restarting:
		c.gen = 0
		c.close()
		return
	case *tick:
		if m.gen != c.gen {
			return
		}
		if c.m != nil {
			c.m.tick()
		} else {
			c.fetch()
		}
		c.expire()
		if now := c.cfg.Clock.Now(); now.Sub(c.lastBeat) >= c.cfg.HeartbeatInterval {
			c.lastBeat = now
			c.beat()
		}
		c.fenceSilent()
		c.checkLeaders()
		c.scheduleTick()
	case *RaftMessage:
		if c.m == nil || !c.sameCluster(m) {
			return
		}
		data, whole := c.assemble(m)
		if !whole {
			return
		}
		msg := &pb.Message{}
		if err := proto.Unmarshal(data, msg); err != nil || msg.GetFrom() != raftID(m.Origin.Node) {
			c.cfg.Logger.Warn().Err(err).Int32("from", m.Origin.Node).Msg("controller: dropping a raft message that does not decode or names another sender")
			return
		}
		c.heardFrom(msg, c.cfg.Clock.Now())
		if err := c.m.step(msg); err != nil {
			c.cfg.Logger.Warn().Err(err).Int32("from", m.Origin.Node).Msg("controller: raft refused a message")
		}
	case *Forward:
		cmd, err := decodeCommand(m.Kind, m.Command)
		if err != nil {
			c.cfg.Logger.Warn().Err(err).Int32("from", m.Origin.Node).Msg("controller: dropping a forwarded command")
			return
		}
		c.decideForwarded(m.Request, cmd, ctx.Sender())
		c.flushLater()
		return
	case *flush:
		c.flushing = false
	case *ForwardAnswer:
		c.answer(m.Request, m.Result, m.After)
	case *BrokerHeartbeat:
		c.heartbeat(m.Origin)
	case *ShutDown:
		c.shutDown()
	case *DescribeQuorum:
		ctx.Respond(c.describe())
		return
	case *MetadataFetch:
		if c.m != nil {
			c.sawFetch(m)
			ctx.Respond(c.serveFetch(m))
		}
		return
	case *MetadataEntries:
		c.fetched(m)
	case *actors.Unknown:
		c.cfg.Logger.Warn().Uint32("type", m.TypeID).Str("reason", m.Reason).Msg("controller: dropping a message from a peer")
		return
	case command:
		c.take(c.nextRequest(), m, ctx.Sender())
		c.flushLater()
		return
	default:
		return
	}
	c.process()
}

func (c *Controller) start() error {
	c.committed, c.head, c.published = image.Empty(), image.Empty(), nil
	c.answered, c.applied = nil, 0
	c.outbox, c.proposed, c.heard = map[RequestID]*pending{}, map[RequestID]bool{}, map[int32]time.Time{}
	c.refusals = nil
	c.peerHeard, c.peerCaughtUp = map[int32]time.Time{}, map[int32]time.Time{}
	c.foreign, c.assembling = map[int32]string{}, map[int32]*assembly{}
	c.pulling, c.served.index, c.served.bytes = pulling{}, 0, nil
	c.observers = map[int32]*observed{}
	c.leader, c.term, c.caughtUp = 0, 0, false
	c.gen = nextGen()
	if c.cfg.Observer {
		c.showRole(roleView{role: "observer"})
		return c.loadObserved() // and it fetches on at its first tick
	}
	disk, err := openLogDisk(c.cfg.FS, c.cfg.Dir, c.cfg.Clock)
	if err != nil {
		return err
	}
	c.disk = disk
	voters := []uint64{raftID(c.cfg.NodeID)}
	for id := range c.cfg.Peers {
		voters = append(voters, raftID(id))
	}
	slices.Sort(voters)
	if err := c.migrate(voters); err != nil {
		return err
	}
	if c.m, err = newMember(raftID(c.cfg.NodeID), voters, disk); err != nil {
		return err
	}
	// The member loaded the newest snapshot from disk: the image starts
	// from it.
	if snap, err := c.m.mem.Snapshot(); err != nil {
		return err
	} else if !raft.IsEmptySnap(snap) {
		if err := c.restore(snap); err != nil {
			return err
		}
	}
	if len(voters) == 1 {
		// Alone, there is nobody to wait for: lead at once.
		if err := c.m.rn.Campaign(); err != nil {
			return err
		}
	}
	c.process()
	return nil
}

func (c *Controller) close() {
	if c.disk != nil {
		if err := c.disk.log.Close(); err != nil {
			c.cfg.Logger.Error().Err(err).Msg("closing the metadata log")
		}
		c.disk = nil
	}
}

var gens atomic.Uint64

// nextGen numbers tick chains: a restarted controller ignores the ticks
// its earlier instance scheduled.
func nextGen() uint64 { return gens.Add(1) }

func (c *Controller) scheduleTick() {
	sys, self, msg := c.self.ActorSystem(), c.self.Self(), &tick{gen: c.gen}
	time.AfterFunc(c.cfg.Tick, func() { sys.Root.Send(self, msg) })
}

// sameCluster reports whether a raft message comes from this member's
// cluster (or either does not know its cluster yet); it logs a peer of
// another cluster once.
func (c *Controller) sameCluster(m *RaftMessage) bool {
	mine := c.committed.ClusterID
	if m.Cluster == "" || mine == "" || m.Cluster == mine {
		delete(c.foreign, m.Origin.Node)
		return true
	}
	if c.foreign[m.Origin.Node] != m.Cluster {
		c.foreign[m.Origin.Node] = m.Cluster
		c.cfg.Logger.Error().Int32("peer", m.Origin.Node).Str("peer.cluster", m.Cluster).Str("cluster", mine).
			Msg("controller: a voter belongs to another cluster, and its raft messages are dropped: one of the two nodes has another cluster's data.dir; start that one on an empty data.dir")
	}
	// Only a leader sends appends and heartbeats, and a leader has a
	// majority of the voters behind it (check quorum): one of another
	// cluster means this node is the one on a foreign data directory,
	// and it gives up.
	msg := &pb.Message{}
	if err := proto.Unmarshal(m.Data, msg); err == nil && c.cfg.Refused != nil &&
		(msg.GetType() == pb.MessageType_MsgApp || msg.GetType() == pb.MessageType_MsgHeartbeat) {
		c.cfg.Refused(fmt.Errorf("data.dir %s holds cluster %s, but the voters' active controller, node %d, leads cluster %s: start this node on an empty data.dir to join them", c.cfg.Dir, mine, m.Origin.Node, m.Cluster))
	}
	return false
}

// takeOwn takes a command of the controller's own.
func (c *Controller) takeOwn(cmd command) {
	c.take(c.nextRequest(), cmd, nil)
}

// nextRequest names a command this controller takes.
func (c *Controller) nextRequest() RequestID {
	c.seq++
	return RequestID{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation, Seq: c.seq}
}

// take accepts a command from this node and sends it on its way.
func (c *Controller) take(id RequestID, cmd command, reply *actor.PID) {
	wait := c.cfg.CommandTimeout
	if t := cmd.timeout(); t > 0 && t < wait {
		wait = t
	}
	p := &pending{cmd: cmd, reply: reply, deadline: c.cfg.Clock.Now().Add(wait)}
	c.outbox[id] = p
	c.dispatch(id, p)
}

// dispatch decides a command here if this controller is active, forwards
// it to the active one otherwise, or leaves it for a later tick while
// there is none.
func (c *Controller) dispatch(id RequestID, p *pending) {
	p.held = nil // decided again, by whoever leads now
	switch {
	case c.active():
		c.decide(id, p.cmd, nil)
	case c.leader != 0 && c.leader != raftID(c.cfg.NodeID):
		to := c.cfg.Peers[nodeID(c.leader)]
		if to == nil {
			return
		}
		body, err := msgpack.Marshal(p.cmd)
		if err != nil {
			c.answerLocal(id, p.cmd.failed(kerr.UnknownServerError, err.Error()))
			return
		}
		c.self.Request(to, &Forward{
			Origin:  actors.Origin{Node: c.cfg.NodeID, Incarnation: c.cfg.Incarnation},
			Request: id, Kind: p.cmd.kind(), Command: body,
		})
		p.sent = c.cfg.Clock.Now()
	}
}

// active reports whether this controller leads and may decide.
func (c *Controller) active() bool {
	return c.leader == raftID(c.cfg.NodeID) && c.caughtUp
}

// decideForwarded decides a command forwarded by another controller;
// one that reached a controller no longer active is dropped, and its
// origin sends it again.
func (c *Controller) decideForwarded(id RequestID, cmd command, reply *actor.PID) {
	if !c.active() {
		return
	}
	c.decide(id, cmd, reply)
}

// decide decides a command at the active controller, at most once per
// request id: an answered one is answered again, a proposed one waits
// for its entry. reply is the forwarding controller, nil for our own.
func (c *Controller) decide(id RequestID, cmd command, reply *actor.PID) {
	for _, a := range c.answered {
		if a.Request == id && a.Kind == cmd.kind() {
			c.reply(id, reply, a.Result, 0)
			return
		}
	}
	if c.proposed[id] {
		return
	}
	result, records := cmd.decide(c)
	body, err := msgpack.Marshal(result)
	if err != nil {
		body, _ = msgpack.Marshal(cmd.failed(kerr.UnknownServerError, err.Error()))
		records = nil
	}
	if len(records) == 0 {
		if len(c.proposed) > 0 {
			// Decided against entries of ours not yet in the log: its
			// index is known once the next ready has written them.
			c.refusals = append(c.refusals, refusal{id, reply, body})
			return
		}
		c.reply(id, reply, body, c.applied)
		return
	}
	head := c.head
	for _, r := range records {
		if head, err = head.Apply(head.Offset, r); err != nil {
			// The planners checked every record against head: a bug.
			b, _ := msgpack.Marshal(cmd.failed(kerr.UnknownServerError, err.Error()))
			c.reply(id, reply, b, 0)
			return
		}
	}
	recs, err := encodeRecords(records)
	if err == nil {
		var data []byte
		if data, err = msgpack.Marshal(&entry{Request: id, Kind: cmd.kind(), Records: recs, Result: body}); err == nil {
			err = c.m.propose(data)
		}
	}
	if err != nil {
		// Not proposed (leadership just moved, or too much uncommitted):
		// our own command is dispatched again at the next change or
		// tick, a forwarded one is sent again by its origin.
		c.cfg.Logger.Debug().Err(err).Msg("controller: proposal dropped")
		return
	}
	c.head = head
	c.proposed[id] = true
}

// reply sends a result, to be answered once the entries up to after are
// applied: to the forwarding controller, or to our own caller.
func (c *Controller) reply(id RequestID, to *actor.PID, result []byte, after uint64) {
	if to != nil {
		c.self.Send(to, &ForwardAnswer{Request: id, Result: result, After: after})
		return
	}
	c.answer(id, result, after)
}

// answer answers a command of this node's, if it still waits, once the
// entries up to after are applied here.
func (c *Controller) answer(id RequestID, result []byte, after uint64) {
	p := c.outbox[id]
	if p == nil {
		return
	}
	if after > c.applied {
		p.held, p.after = result, after
		return
	}
	res := p.cmd.newResult()
	if err := msgpack.Unmarshal(result, res); err != nil {
		res = p.cmd.failed(kerr.UnknownServerError, fmt.Sprintf("controller: decode a result: %v", err))
	}
	c.answerLocal(id, res)
}

func (c *Controller) answerLocal(id RequestID, res any) {
	p := c.outbox[id]
	delete(c.outbox, id)
	if p == nil {
		return
	}
	if p.reply != nil {
		c.self.Send(p.reply, res)
	}
	d, own := res.(*commandDone)
	switch {
	case !own:
	case isRegistration(p.cmd):
		c.registered(d)
	case d.Err != nil:
		c.cfg.Logger.Warn().Str("error", d.Err.Message).Str("message", d.Message).Msgf("controller: %T failed", p.cmd)
	}
}

// expire answers the commands past their deadline, and sends again the
// forwards not answered within retryInterval.
func (c *Controller) expire() {
	now := c.cfg.Clock.Now()
	for _, id := range c.waiting() {
		p := c.outbox[id]
		switch {
		case now.After(p.deadline):
			c.answerLocal(id, p.cmd.failed(kerr.RequestTimedOut, "No active controller committed the request in time: "+NoLeaderHint))
		case p.held != nil:
		case c.active() && !c.proposed[id], !c.active() && now.Sub(p.sent) >= retryInterval:
			c.dispatch(id, p)
		}
	}
}

// process handles what raft has ready: persisted by the member, then
// messages out, the snapshot and committed entries applied, leadership
// followed, the image published and the waiting answered.
func (c *Controller) process() {
	if c.m == nil {
		c.report()
		return
	}
	rd, err := c.m.ready()
	if err != nil {
		panic(fmt.Errorf("controller: raft storage: %w", err))
	}
	for _, r := range c.refusals {
		c.reply(r.id, r.reply, r.result, c.m.lastIndex())
	}
	c.refusals = nil
	for _, msg := range rd.Messages {
		c.send(msg)
	}
	if rd.Snapshot != nil {
		if err := c.restore(rd.Snapshot); err != nil {
			panic(err)
		}
	}
	var answers []answer
	for _, e := range rd.Committed {
		if a, ok := c.apply(e); ok {
			answers = append(answers, a)
		}
	}
	c.follow()
	c.appliedEntries(answers)
	if c.unsnapped >= c.cfg.SnapshotBytes {
		c.snapshot()
	}
	c.report()
}

// appliedEntries publishes the image after entries were applied, asks for this
// broker's first registration once the cluster is named, and answers the
// commands whose entries were applied.
func (c *Controller) appliedEntries(answers []answer) {
	if c.committed != c.published && c.committed.ClusterID != "" {
		c.published = c.committed
		c.cfg.Publish(c.committed)
	}
	// The first registration goes as soon as the cluster is named, not a
	// heartbeat later: the node serves clients once it is registered.
	if _, ok := c.committed.Brokers[c.cfg.NodeID]; !ok && !c.cfg.NoBroker && c.committed.ClusterID != "" && c.refusedSince.IsZero() && c.leader != 0 {
		c.register()
	}
	for _, a := range answers {
		c.answer(a.Request, a.Result, 0)
	}
	for _, id := range c.waiting() {
		if p := c.outbox[id]; p.held != nil && p.after <= c.applied {
			c.answer(id, p.held, 0)
		}
	}
}

// report hands the quorum's status to cfg.Quorum when it changed.
func (c *Controller) report() {
	s := Status{Leader: -1, Term: c.term, Commit: c.applied, Applied: c.applied,
		HeartbeatsSent: c.heartbeatsSent, HeartbeatsReceived: c.heartbeatsReceived}
	lead := c.leader
	if c.m != nil {
		st := c.m.status()
		s.Term, s.Commit, lead = st.GetTerm(), st.GetCommit(), st.Lead
	}
	if lead != 0 {
		s.Leader = nodeID(lead)
	} else if s.NoLeaderSince = c.status.NoLeaderSince; s.NoLeaderSince.IsZero() {
		s.NoLeaderSince = c.cfg.Clock.Now()
	}
	if s != c.status && c.cfg.Quorum != nil {
		c.cfg.Quorum(s)
	}
	c.status = s
	c.trackPeers()
}

func (c *Controller) send(msg *pb.Message) {
	to := c.cfg.Peers[nodeID(msg.GetTo())]
	if to == nil {
		return
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		c.cfg.Logger.Error().Err(err).Msg("controller: encode a raft message")
		return
	}
	for _, rm := range c.raftMessages(b) {
		c.self.Send(to, rm)
	}
	c.m.sent(msg)
}

// apply applies one committed entry to the image; ok when it answers a
// request.
func (c *Controller) apply(e *pb.Entry) (a answer, ok bool) {
	c.applied = e.GetIndex()
	if e.GetType() != pb.EntryType_EntryNormal || len(e.GetData()) == 0 {
		return a, false // a new leader's empty entry
	}
	c.unsnapped += len(e.GetData())
	var en entry
	if err := msgpack.Unmarshal(e.GetData(), &en); err != nil {
		c.cfg.Logger.Error().Err(err).Uint64("index", e.GetIndex()).Msg("controller: skipping a metadata entry that does not decode")
		return a, false
	}
	a = answer{Request: en.Request, Kind: en.Kind, Result: en.Result}
	c.remember(a)
	delete(c.proposed, en.Request)
	records, err := decodeRecords(en.Records)
	im := c.committed
	for _, r := range records {
		if err != nil {
			break
		}
		im, err = im.Apply(int64(e.GetIndex())-1, r)
	}
	if err != nil {
		// Every controller skips it alike, so their images agree.
		c.cfg.Logger.Error().Err(err).Uint64("index", e.GetIndex()).Msg("controller: skipping a metadata entry that does not apply")
		return a, true
	}
	c.committed = im
	return a, true
}

func (c *Controller) remember(a answer) {
	c.answered = append(c.answered, a)
	if n := len(c.answered) - maxAnswered; n > 0 {
		c.answered = slices.Delete(c.answered, 0, n)
	}
}

// restore replaces the state machine with a snapshot's.
func (c *Controller) restore(snap *pb.Snapshot) error {
	im, answered, err := decodeSnapshot(snap.GetData())
	if err != nil {
		return err
	}
	c.committed, c.answered = im, answered
	c.applied = snap.GetMetadata().GetIndex()
	c.unsnapped = 0
	return nil
}

// snapshot compacts the log up to what is applied.
func (c *Controller) snapshot() {
	data, err := encodeSnapshot(c.committed, c.answered)
	if err == nil {
		err = c.m.compact(c.applied, data)
	}
	if err != nil {
		c.cfg.Logger.Error().Err(err).Msg("controller: snapshot failed; the metadata log keeps growing until one succeeds")
		return
	}
	c.unsnapped = 0
}

// follow takes note of leadership after a ready: a new leader catches up
// before deciding, a deposed one forgets what it proposed, and commands
// waiting here go to the new active controller.
func (c *Controller) follow() {
	st := c.m.status()
	self := raftID(c.cfg.NodeID)
	c.showRole(roleView{role: raftRole(st.RaftState), epoch: int32(min(st.GetTerm(), math.MaxInt32))})
	if st.Lead != c.leader || st.GetTerm() != c.term {
		if st.Lead != c.leader {
			c.cfg.Logger.Info().Int32("leader", nodeID(st.Lead)).Uint64("term", st.GetTerm()).Msg("controller: quorum leader changed")
		}
		c.leader, c.term = st.Lead, st.GetTerm()
		c.head, c.caughtUp = c.committed, false
		c.proposed = map[RequestID]bool{}
		if c.leader == self {
			c.termFrom = c.m.lastIndex()
		}
		c.redispatch()
	}
	if c.leader == self && !c.caughtUp && c.applied >= c.termFrom {
		c.caughtUp, c.head = true, c.committed
		c.activeSince, c.heard = c.cfg.Clock.Now(), map[int32]time.Time{}
		if c.committed.ClusterID == "" {
			c.takeOwn(&bootCluster{ClusterID: newClusterID(), Scram: c.bootstrapScram()})
		}
		c.redispatch()
	}
}

func isRegistration(cmd command) bool {
	_, ok := cmd.(*registerBroker)
	return ok
}

func (c *Controller) redispatch() {
	for _, id := range c.waiting() {
		c.dispatch(id, c.outbox[id])
	}
}

// waiting returns the ids of the commands in the outbox, oldest first.
func (c *Controller) waiting() []RequestID {
	return slices.SortedFunc(maps.Keys(c.outbox), func(a, b RequestID) int { return cmp.Compare(a.Seq, b.Seq) })
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

func newTopicID() image.TopicID {
	var id image.TopicID
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // UUID version 4, as Kafka's Uuid.randomUuid
	id[8] = id[8]&0x3f | 0x80
	return id
}
