package share

import (
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
)

// StateClient asks share coordinators, for this node's share-partitions
// and group coordinators, to read and write share-partitions' state (the
// persister of Kafka's share-partition leader): it sends each request to
// the sharestate supervisor of the node leading the key's
// __share_group_state partition (node/<leader>/sharestate), over remoting
// or locally, as txn.Verifier sends Verify.
//
// Safe for concurrent use; it holds no state of its own. Its fields are
// set once, before the first Ask.
type StateClient struct {
	System *actor.ActorSystem
	// NodeID and Incarnation are this node's: every request carries them
	// (actors.Origin).
	NodeID      int32
	Incarnation uint64
	// Image returns the node's newest metadata image.
	Image func() *image.Image
	// Timeout bounds an Ask: retries included, reply is called within it
	// (and a little more: an answer already on its way is waited for).
	Timeout time.Duration
	// EnsureTopic creates __share_group_state when the image does not have
	// it (as FindCoordinator creates it), nil to wait for someone else
	// to. Called on the asking goroutine.
	EnsureTopic func() error
}

// Ask sends msg (*InitializeState, *ReadState, *WriteState, *DeleteState or
// *ReadSummary, its Key set to key) to key's share coordinator, without
// blocking, and calls reply exactly once, on another goroutine: with the
// coordinator's answer, or with a StateResult whose Code says why there is
// none (COORDINATOR_NOT_AVAILABLE: no coordinator answered within
// Timeout; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS: the last
// answer, the coordinator still moving at the deadline; INVALID_REQUEST:
// msg is none of the five).
//
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE,
// and a request not answered (the coordinator's node died, a message
// lost), are asked again after 20 ms doubling to 500 ms, of the leader the
// newest image names then, as Kafka's persister retries a find of the
// coordinator: the requests are idempotent (a write's batches laid again
// over the state give the same state; an initialization fenced only by a
// newer state epoch; a delete of a deleted key is nothing).
func (c *StateClient) Ask(key Key, msg any, reply func(*StateResult)) {
	origin := actors.Origin{Node: c.NodeID, Incarnation: c.Incarnation}
	switch m := msg.(type) {
	case *InitializeState:
		m.Origin, m.Key = origin, key
	case *ReadState:
		m.Origin, m.Key = origin, key
	case *WriteState:
		m.Origin, m.Key = origin, key
	case *DeleteState:
		m.Origin, m.Key = origin, key
	case *ReadSummary:
		m.Origin, m.Key = origin, key
	default:
		go reply(result(kerr.InvalidRequest, "share: not a share state request"))
		return
	}
	deadline := time.Now().Add(c.Timeout)
	backoff := 20 * time.Millisecond
	var ask func()
	ask = func() {
		c.ask(key, msg, deadline, func(r *StateResult) {
			retriable := r.Code == kerr.NotCoordinator.Code || r.Code == kerr.CoordinatorLoadInProgress.Code ||
				r.Code == kerr.CoordinatorNotAvailable.Code
			if !retriable || time.Now().Add(backoff).After(deadline) {
				reply(r)
				return
			}
			// NB: backoff changes before the next ask is scheduled: that
			// ask's reply reads it on another goroutine.
			d := backoff
			backoff = min(2*backoff, 500*time.Millisecond)
			time.AfterFunc(d, ask)
		})
	}
	go ask()
}

// attemptWait bounds the wait for one answer.
const attemptWait = 6 * time.Second

// ask sends msg once to the coordinator the image names now, waiting
// until deadline at most.
func (c *StateClient) ask(key Key, msg any, deadline time.Time, reply func(*StateResult)) {
	im := c.Image()
	t := im.Topic(StateTopic)
	if t == nil && c.EnsureTopic != nil {
		if err := c.EnsureTopic(); err == nil {
			im = c.Image()
			t = im.Topic(StateTopic)
		}
	}
	if t == nil || len(t.Partitions) == 0 {
		reply(result(kerr.CoordinatorNotAvailable, ""))
		return
	}
	leader := t.Partitions[PartitionFor(key, int32(len(t.Partitions)))].Leader
	addr := c.System.Address()
	if leader != c.NodeID {
		b, ok := im.Brokers[leader]
		if leader < 0 || !ok || b.ClusterAddr == "" {
			reply(result(kerr.CoordinatorNotAvailable, ""))
			return
		}
		addr = b.ClusterAddr
	}
	pid := actor.NewPID(addr, "node/"+strconv.Itoa(int(leader))+"/sharestate")
	// NB: an attempt waits no longer than a coordinator's append may take
	// (share.coordinator.write.timeout.ms, 5 s) and a little, so that a
	// request lost on the way is asked again within Timeout.
	wait := max(min(time.Until(deadline), attemptWait), 10*time.Millisecond)
	actors.Call(c.System.Root, pid, msg, wait, func(res any, err error) {
		if r, ok := res.(*StateResult); ok && err == nil {
			reply(r)
			return
		}
		// No answer: the node or the message lost, a dead letter (no
		// sharestate there yet), the actor failed on it.
		reply(result(kerr.CoordinatorNotAvailable, ""))
	})
}
