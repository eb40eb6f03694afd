package transport

// Fetch sessions (KIP-227), as Kafka's FetchSession and FetchSessionCache
// keep them.
//
// A consumer that fetches the same partitions over and over need not send
// them all every time: it opens a session with a full fetch (SessionEpoch
// 0), and afterwards sends incremental fetches (epoch 1, 2, ...) that list
// only the partitions whose fetch parameters changed, plus the partitions
// to forget. The broker remembers the rest and answers only the partitions
// with something new: records, a changed high watermark, last stable
// offset or log start offset, or an error.
//
//	SessionID  SessionEpoch  meaning
//	0          -1            sessionless full fetch (and v4-6, which have no sessions)
//	0          0             full fetch that opens a session (SessionID 0 in
//	                         the response when the cache has no room)
//	id         0             closes session id, then as above
//	id         -1            closes session id; a sessionless full fetch
//	id         n > 0         incremental fetch in session id: n must be the
//	                         epoch it expects next (INVALID_FETCH_SESSION_EPOCH),
//	                         the id must exist (FETCH_SESSION_ID_NOT_FOUND),
//	                         and name topics as the session does, by id from
//	                         v13 or by name before (FETCH_SESSION_TOPIC_ID_ERROR)
//
// A session error answers with the top-level error code, SessionID 0 and no
// topics; the client then starts a new session. An incremental fetch that
// leaves the session with no partitions closes it (SessionID 0 in the
// response), as Kafka does.
//
// Fairness: the session keeps its partitions in order, and a partition that
// returned records moves to the back, so that under the response's MaxBytes
// every partition gets its turn (Kafka's IncrementalFetchContext does the
// same).
//
// The cache is the node's (one per API, shared by every connection: a
// client may reconnect and go on with its session). It holds at most
// max.incremental.fetch.session.cache.slots sessions. When it is full a new
// session may evict, in Kafka's order of preference: the least recently used
// session if it is idle for longer than
// min.incremental.fetch.session.eviction.ms; otherwise the session with the
// fewest partitions among those that had existed for longer than that at
// their last use, if the new session has strictly more partitions. Failing
// both, the fetch is answered without a session (SessionID 0) and the client
// goes on with full fetches. Followers' fetches (replica_fetch.go) use no
// session.
//
// Concurrency: one mutex guards the cache and every session in it; it is
// held only to look up and update sessions, never while reading partitions
// or waiting for records.

import (
	"container/list"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// defaultFetchSessionSlots is max.incremental.fetch.session.cache.slots
	// (Kafka's default 1000).
	defaultFetchSessionSlots = 1000
	// defaultFetchSessionEvictionAge is
	// min.incremental.fetch.session.eviction.ms (Kafka's default 120000).
	defaultFetchSessionEvictionAge = 120 * time.Second
)

// fetchWant is one partition a fetch reads, with the parameters the client
// gave for it: from the request, or remembered by the session.
type fetchWant struct {
	key                fetchKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
}

// fetchKey names a partition as the request does: by topic id from v13, by
// topic name before (the other field is zero).
type fetchKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

func wantFromRequest(byID bool, rt *kmsg.FetchRequestTopic, rp *kmsg.FetchRequestTopicPartition) fetchWant {
	w := fetchWant{fetchOffset: rp.FetchOffset, maxBytes: rp.PartitionMaxBytes, currentLeaderEpoch: rp.CurrentLeaderEpoch}
	w.key.partition = rp.Partition
	if byID {
		w.key.topicID = rt.TopicID
	} else {
		w.key.topic = rt.Topic
	}
	return w
}

// sessionPartition is a partition in a session: the client's latest
// parameters, and what the last response told it.
type sessionPartition struct {
	want fetchWant
	// The values last sent; -1 makes the next response include the
	// partition (a new partition, or one that last answered an error).
	highWatermark, lastStableOffset, logStartOffset int64
}

// fetchSession is one client's session.
type fetchSession struct {
	id        int32
	nextEpoch int32 // the epoch the next incremental fetch must carry
	byID      bool  // topics named by id (opened with v13+)
	created   time.Time
	lastUsed  time.Time
	// evictable is Kafka's "evictable by all": the session had existed for
	// longer than the eviction age at its last use.
	evictable bool
	order     list.List // of *sessionPartition, in fetch order
	index     map[fetchKey]*list.Element
}

func (s *fetchSession) add(w fetchWant) {
	if e, ok := s.index[w.key]; ok {
		e.Value.(*sessionPartition).want = w
		return
	}
	s.index[w.key] = s.order.PushBack(&sessionPartition{want: w, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1})
}

// wants lists the session's partitions in fetch order.
func (s *fetchSession) wants() []fetchWant {
	ws := make([]fetchWant, 0, s.order.Len())
	for e := s.order.Front(); e != nil; e = e.Next() {
		ws = append(ws, e.Value.(*sessionPartition).want)
	}
	return ws
}

// nextFetchEpoch is Kafka's FetchMetadata.nextEpoch: epochs run 1, 2, ...
// and wrap from the largest int32 back to 1.
func nextFetchEpoch(e int32) int32 {
	if e == 1<<31-1 {
		return 1
	}
	return e + 1
}

// fetchSessionCache is the node's fetch sessions.
type fetchSessionCache struct {
	slots    int
	evictAge time.Duration
	now      func() time.Time

	mu       sync.Mutex
	sessions map[int32]*fetchSession
}

func newFetchSessionCache(slots int, evictAge time.Duration) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, evictAge: evictAge, now: time.Now, sessions: map[int32]*fetchSession{}}
}

// fetchContext is what a fetch request reads and how it answers, decided
// when it starts.
type fetchContext struct {
	wants []fetchWant
	// err is a session error: answer with it and nothing else.
	err *kerr.Error
	// openSession: a full fetch that opens a session once it is answered.
	openSession bool
	byID        bool
	// session is the incremental fetch's session; nil otherwise.
	session *fetchSession
	epoch   int32 // the incremental fetch's epoch
}

// begin applies a fetch request to the cache, as Kafka's
// FetchManager.newContext: it closes sessions the request closes, and for an
// incremental fetch checks the session, adds, updates and forgets its
// partitions and advances its epoch.
func (c *fetchSessionCache) begin(req *kmsg.FetchRequest) *fetchContext {
	byID := req.Version >= 13
	fc := &fetchContext{byID: byID}
	full := req.Version < 7 || req.SessionEpoch == 0 || req.SessionEpoch == -1
	if full {
		seen := make(map[fetchKey]int)
		for i := range req.Topics {
			rt := &req.Topics[i]
			for j := range rt.Partitions {
				w := wantFromRequest(byID, rt, &rt.Partitions[j])
				// A partition listed twice keeps its first place and
				// its last parameters, as Kafka's request map does.
				if k, ok := seen[w.key]; ok {
					fc.wants[k] = w
					continue
				}
				seen[w.key] = len(fc.wants)
				fc.wants = append(fc.wants, w)
			}
		}
		if req.Version < 7 {
			return fc
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if req.SessionID != 0 {
			delete(c.sessions, req.SessionID)
		}
		fc.openSession = req.SessionEpoch == 0
		return fc
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[req.SessionID]
	switch {
	case s == nil:
		fc.err = kerr.FetchSessionIDNotFound
		return fc
	case s.nextEpoch != req.SessionEpoch:
		fc.err = kerr.InvalidFetchSessionEpoch
		return fc
	case s.byID != byID:
		fc.err = kerr.FetchSessionTopicIDError
		return fc
	}
	for i := range req.Topics {
		rt := &req.Topics[i]
		for j := range rt.Partitions {
			s.add(wantFromRequest(byID, rt, &rt.Partitions[j]))
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			k := fetchKey{partition: p}
			if byID {
				k.topicID = ft.TopicID
			} else {
				k.topic = ft.Topic
			}
			if e, ok := s.index[k]; ok {
				s.order.Remove(e)
				delete(s.index, k)
			}
		}
	}
	if s.order.Len() == 0 {
		// Nothing left to fetch: Kafka closes the session and answers
		// sessionless.
		delete(c.sessions, s.id)
		return fc
	}
	c.touch(s)
	s.nextEpoch = nextFetchEpoch(s.nextEpoch)
	fc.session, fc.epoch, fc.wants = s, req.SessionEpoch, s.wants()
	return fc
}

// touch records a use of s.
func (c *fetchSessionCache) touch(s *fetchSession) {
	s.lastUsed = c.now()
	s.evictable = s.lastUsed.Sub(s.created) > c.evictAge
}

// open creates a session for a full fetch just answered with res (the
// values it sent, by want) and returns its id, or 0 when the cache has no
// room.
func (c *fetchSessionCache) open(fc *fetchContext, res []fetchResult) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.slots && !c.evict(len(fc.wants)) {
		return 0
	}
	var id int32
	for id == 0 || c.sessions[id] != nil {
		id = rand.Int32() // non-negative; 0 means no session
	}
	now := c.now()
	s := &fetchSession{id: id, nextEpoch: 1, byID: fc.byID, created: now, index: make(map[fetchKey]*list.Element, len(fc.wants))}
	for i, w := range fc.wants {
		s.add(w)
		s.index[w.key].Value.(*sessionPartition).sent(&res[i])
	}
	c.sessions[id] = s
	c.touch(s)
	return id
}

// evict makes room for a new session of size partitions if Kafka's rules
// let it, and reports whether it did.
func (c *fetchSessionCache) evict(size int) bool {
	var lru, smallest *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) {
			lru = s
		}
		if s.evictable && (smallest == nil || s.order.Len() < smallest.order.Len() ||
			s.order.Len() == smallest.order.Len() && s.id < smallest.id) {
			smallest = s
		}
	}
	switch {
	case lru != nil && c.now().Sub(lru.lastUsed) > c.evictAge:
		delete(c.sessions, lru.id)
	case smallest != nil && size > smallest.order.Len():
		delete(c.sessions, smallest.id)
	default:
		return false
	}
	return true
}

// sent records the values a response gave the client for the partition,
// and reports whether the partition belongs in an incremental response:
// it has records, an error, a preferred read replica, or a value that
// changed since it was last sent (Kafka's
// CachedPartition.maybeUpdateResponseData).
func (sp *sessionPartition) sent(r *fetchResult) (respond bool) {
	p := &r.part
	respond = r.slice.Size > 0 || p.ErrorCode != 0 || p.PreferredReadReplica >= 0 ||
		sp.highWatermark != p.HighWatermark || sp.lastStableOffset != p.LastStableOffset ||
		sp.logStartOffset != p.LogStartOffset
	sp.highWatermark, sp.lastStableOffset, sp.logStartOffset = p.HighWatermark, p.LastStableOffset, p.LogStartOffset
	if p.ErrorCode != 0 {
		// Resend the partition once the error is gone, whatever its
		// offsets then.
		sp.highWatermark = -1
	}
	return respond
}

// answer decides which results an incremental fetch returns, updating the
// session with what they tell the client and moving the partitions that
// returned records to the back. It returns the indexes of the results to
// send, or a session error when another fetch used the session meanwhile.
func (c *fetchSessionCache) answer(fc *fetchContext, res []fetchResult) ([]int, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	if s.nextEpoch != nextFetchEpoch(fc.epoch) {
		return nil, kerr.InvalidFetchSessionEpoch
	}
	var keep []int
	for i, w := range fc.wants {
		e, ok := s.index[w.key]
		if !ok {
			continue
		}
		if e.Value.(*sessionPartition).sent(&res[i]) {
			keep = append(keep, i)
			if res[i].slice.Size > 0 {
				s.order.MoveToBack(e)
			}
		}
	}
	return keep, nil
}

// len returns how many sessions the cache holds.
func (c *fetchSessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
