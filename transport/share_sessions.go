package transport

import (
	"errors"
	"slices"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/share"
)

// Share sessions (KIP-932), the share groups' fetch sessions: a share
// consumer keeps one per broker, keyed by its group and member id, that
// lists the partitions it fetches there; each ShareFetch or
// ShareAcknowledge names the session's epoch, which the broker checks and
// moves on, so that a request lost or replayed is refused. A session
// belongs to the connection that opened it: when that connection closes,
// or the session ends (epoch -1), the records its member still holds on
// the session's partitions are released at once rather than when their
// locks expire.

// shareTP is a partition of a share session, by topic id.
type shareTP struct {
	topicID   [16]byte
	partition int32
}

type shareSessionKey struct{ group, member string }

type shareSession struct {
	epoch int32 // the epoch the next request must carry
	parts []shareTP
	conn  *conn
}

// shareSessions are a node's share sessions.
type shareSessions struct {
	mu  sync.Mutex
	m   map[shareSessionKey]*shareSession
	max int // group.share.max.share.sessions
}

// nextEpoch is the epoch after e: it wraps to 1, never 0 (which opens a
// session) nor -1 (which closes one).
func nextEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// open (re)creates a member's session with parts, on c; epoch 0.
func (s *shareSessions) open(k shareSessionKey, parts []shareTP, c *conn) (*shareSession, *kerr.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[shareSessionKey]*shareSession{}
	}
	if _, ok := s.m[k]; !ok && s.max > 0 && len(s.m) >= s.max {
		return nil, kerr.ShareSessionLimitReached
	}
	ss := &shareSession{epoch: 1, parts: parts, conn: c}
	s.m[k] = ss
	return ss, nil
}

// next checks a request's epoch against the member's session and moves
// the session to the next epoch, adding and forgetting partitions. It
// returns the session after the request and the partitions of add that
// were not in it before.
func (s *shareSessions) next(k shareSessionKey, epoch int32, add, forget []shareTP) (*shareSession, []shareTP, *kerr.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	switch {
	case ss == nil:
		return nil, nil, kerr.ShareSessionNotFound
	case ss.epoch != epoch:
		return nil, nil, kerr.InvalidShareSessionEpoch
	}
	ss.epoch = nextEpoch(epoch)
	var added []shareTP
	for _, tp := range add {
		if !slices.Contains(ss.parts, tp) {
			ss.parts = append(ss.parts, tp)
			added = append(added, tp)
		}
	}
	ss.parts = slices.DeleteFunc(ss.parts, func(tp shareTP) bool { return slices.Contains(forget, tp) })
	return &shareSession{epoch: ss.epoch, parts: slices.Clone(ss.parts), conn: ss.conn}, added, nil
}

// close ends a member's session (epoch -1) and returns its partitions.
func (s *shareSessions) close(k shareSessionKey) ([]shareTP, *kerr.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.m[k]
	if ss == nil {
		return nil, kerr.ShareSessionNotFound
	}
	delete(s.m, k)
	return ss.parts, nil
}

// connClosed ends the sessions of a connection and returns them.
func (s *shareSessions) connClosed(c *conn) map[shareSessionKey][]shareTP {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out map[shareSessionKey][]shareTP
	for k, ss := range s.m {
		if ss.conn == c {
			if out == nil {
				out = map[shareSessionKey][]shareTP{}
			}
			out[k] = ss.parts
			delete(s.m, k)
		}
	}
	return out
}

// releaseShareSession releases what a member holds on a session's
// partitions led here (a session's end, or its connection's).
func (a *API) releaseShareSession(k shareSessionKey, parts []shareTP) {
	im := a.Image()
	for _, tp := range parts {
		if t := im.TopicsByID[tp.topicID]; t != nil {
			if pid := a.Shares.Get(k.group, t.Name, tp.partition); pid != nil {
				a.System.Root.Send(pid, &share.ReleaseMember{Group: k.group, Member: k.member})
			}
		}
	}
}

// connectionClosed releases the share sessions of a closed connection.
func (a *API) shareConnClosed(c *conn) {
	for k, parts := range a.shareSessions.connClosed(c) {
		a.releaseShareSession(k, parts)
	}
}

// sharePartition returns the actor of a share group's partition led here,
// spawning it if needed.
func (a *API) sharePartition(group, topic string, p int32) (*actor.PID, *kerr.Error) {
	h, _, err := a.hosted(topic, p)
	if err != nil {
		return nil, err
	}
	if pid := a.Shares.Get(group, topic, p); pid != nil {
		return pid, nil
	}
	res, aerr := actors.Ask(a.System, a.SharesPID, &share.Open{Group: group, Handle: h}, a.RequestTimeout)
	if r, ok := res.(*share.OpenResult); aerr == nil && ok && r.PID != nil {
		return r.PID, nil
	}
	return nil, kerr.CoordinatorLoadInProgress
}

// shareAck sends a partition's acknowledgements to its share-partition
// actor and returns a wait for the outcome.
func (a *API) shareAck(group, member, topic string, p int32, batches []share.AckBatch, renew bool) func() *kerr.Error {
	pid, err := a.sharePartition(group, topic, p)
	if err != nil {
		return func() *kerr.Error { return err }
	}
	ch := make(chan *kerr.Error, 1)
	go func() {
		res, err := actors.Ask(a.System, pid, &share.Acknowledge{Member: member, Batches: batches, Renew: renew}, a.RequestTimeout)
		ch <- shareAskError(res, err, func(r *share.AckResult) *kerr.Error { return r.Err })
	}()
	return func() *kerr.Error { return <-ch }
}

// shareAskError maps the outcome of an ask to a share-partition actor to
// its error: a timeout is REQUEST_TIMED_OUT; an actor that failed on the
// request or had stopped (its leadership moved) NOT_LEADER_OR_FOLLOWER,
// which the client retries after a metadata refresh.
func shareAskError[T any](res any, err error, get func(T) *kerr.Error) *kerr.Error {
	switch {
	case errors.Is(err, actors.ErrTimeout):
		return kerr.RequestTimedOut
	case err != nil:
		return kerr.NotLeaderForPartition
	}
	r, ok := res.(T)
	if !ok {
		return kerr.UnknownServerError
	}
	return get(r)
}

// shareAcquire asks a share-partition actor for records.
func (a *API) shareAcquire(pid *actor.PID, m *share.Acquire) share.Acquired {
	res, err := actors.Ask(a.System, pid, m, a.RequestTimeout)
	if r, ok := res.(*share.Acquired); ok && err == nil {
		return *r
	}
	return share.Acquired{Err: shareAskError(res, err, func(r *share.Acquired) *kerr.Error { return r.Err })}
}

// ackBatches converts a partition's acknowledgement batches.
func ackBatches[T any](in []T, conv func(T) (int64, int64, []int8)) []share.AckBatch {
	out := make([]share.AckBatch, 0, len(in))
	for _, b := range in {
		first, last, types := conv(b)
		out = append(out, share.AckBatch{First: first, Last: last, Types: types})
	}
	return out
}
