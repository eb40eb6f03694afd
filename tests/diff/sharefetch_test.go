//go:build kafkadiff

package diff

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share fetch cases (KIP-932) consume one partition as one share group
// member on both brokers: ShareFetch opens a share session and acquires
// the records produced before (share.auto.offset.reset=earliest), then
// ShareAcknowledge and ShareFetch acknowledge them (ACCEPT, RELEASE,
// REJECT, GAP), a released record comes back one delivery count higher,
// alone on its last attempt, and a record released at the delivery limit
// (share.delivery.count.limit, 5 on both) is archived, which moves the
// share-partition start offset that DescribeShareGroupOffsets shows. On
// the way, the errors: acks at epoch 0, a wrong epoch, no session, an
// offset the member does not hold, malformed batches (in Kafka's order of
// checks), ShareAcknowledge at epoch 0, and closing (-1). What must match
// is compared in full: the same requests get the same codes, the same
// records with the same delivery counts, and the same archival decisions;
// where Kafka's answer depends on when its writes finish, differences.go
// says which paths differ and why.
//
// No case depends on timing: records are acquired at once when any is
// available (a fetch that finds none waits MaxWaitMillis and answers
// empty on both), and no lock expires (share.record.lock.duration.ms is
// 30 s, the cases take a few).

// Acknowledge types (ShareFetchRequest.json).
const (
	ackGap     int8 = 0
	ackAccept  int8 = 1
	ackRelease int8 = 2
	ackReject  int8 = 3
)

// ackRange acknowledges offsets first..last with one type or one per offset.
type ackRange struct {
	first, last int64
	types       []int8
}

// shareSession is one member's share session with each broker: the epoch
// each expects next ([Kafka's, Skein's]; they agree unless a broker
// needed more fetches to get the first records).
type shareSession struct {
	c             *dcase
	ids           topicIDSet
	group, member string
	topic         string
	epoch         [2]int32
	// conns are the session's connections, Kafka's and Skein's: a share
	// session belongs to the connection that opened it, and both brokers
	// end it when that connection closes.
	conns [2]net.Conn
}

// dial opens the session's connections; the case closes them at its end.
func (s *shareSession) dial(t *testing.T) {
	t.Helper()
	for i, addr := range []string{kafkaAddr, skeinAddr} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		s.conns[i] = conn
		t.Cleanup(func() { conn.Close() })
	}
}

// exchange sends each broker its request on the session's connections.
func (s *shareSession) exchange(build func(kafka bool) kmsg.Request) (kafka, skein outcome) {
	var outs [2]outcome
	var wg sync.WaitGroup
	for i := range 2 {
		req := build(i == 0)
		req.SetVersion(commonMax(s.c.t, req))
		wg.Go(func() {
			outs[i] = roundTrip(s.conns[i], req)
			outs[i].sent = req.GetVersion()
		})
	}
	wg.Wait()
	return outs[0], outs[1]
}

func idx(kafka bool) int {
	if kafka {
		return 0
	}
	return 1
}

// fetch is a ShareFetch of the session's partition 0 at epoch, with acks,
// waiting up to maxWait ms for records.
func (s *shareSession) fetch(kafka bool, epoch int32, maxWait int32, acks ...ackRange) *kmsg.ShareFetchRequest {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = maxWait, 1, 1<<20, 500, 500
	if epoch == -1 {
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 0, 0, 0, 0
	}
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = s.ids.of(s.topic, kafka)
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
	for _, a := range acks {
		b := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// acknowledge is a ShareAcknowledge of the session's partition 0.
func (s *shareSession) acknowledge(kafka bool, epoch int32, acks ...ackRange) *kmsg.ShareAcknowledgeRequest {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(s.group), kmsg.StringPtr(s.member), epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = s.ids.of(s.topic, kafka)
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.Partition = 0
	for _, a := range acks {
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = a.first, a.last, a.types
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// topLevel is a share answer's request-wide error code.
func topLevel(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.ShareFetchResponse:
		return r.ErrorCode
	case *kmsg.ShareAcknowledgeResponse:
		return r.ErrorCode
	}
	return -1
}

// send compares a request of the session at the epoch each broker
// expects (plus delta), and moves each broker's epoch on when it took the
// request.
func (s *shareSession) send(delta int32, build func(kafka bool, epoch int32) kmsg.Request) (kafka, skein kmsg.Response) {
	s.c.t.Helper()
	sent := s.epoch
	ko, so := s.exchange(func(kafka bool) kmsg.Request {
		return build(kafka, s.epoch[idx(kafka)]+delta)
	})
	s.c.check(fmt.Sprintf("%T v%d", build(true, 0), ko.version(so)), ko, so)
	k, sk := ko.resp, so.resp
	for i, r := range []kmsg.Response{k, sk} {
		if r != nil && topLevel(r) == 0 && delta == 0 && sent[i] >= 0 {
			s.epoch[i] = sent[i] + 1
		}
	}
	return k, sk
}

// acquiredCount is how many records a ShareFetch answer acquired.
func acquiredCount(r *kmsg.ShareFetchResponse) int64 {
	var n int64
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			for _, a := range p.AcquiredRecords {
				n += a.LastOffset - a.FirstOffset + 1
			}
		}
	}
	return n
}

// open opens the session on both brokers and fetches until each acquired
// records, then compares the answers that did. NB: a broker may answer
// the first fetch of a share-partition empty while it initializes its
// state (Kafka's share coordinator creating __share_group_state); the
// session then moves on there one epoch more.
func (s *shareSession) open() {
	t := s.c.t
	t.Helper()
	var outs [2]outcome
	for i := range 2 {
		kafka := i == 0
		for try := 0; ; try++ {
			req := s.fetch(kafka, s.epoch[i], 5000)
			req.SetVersion(commonMax(t, req))
			o := roundTrip(s.conns[i], req)
			o.sent = req.GetVersion()
			if o.err != nil {
				outs[i] = o
				break
			}
			r := o.resp.(*kmsg.ShareFetchResponse)
			if r.ErrorCode == 0 {
				s.epoch[i]++
			}
			if acquiredCount(r) > 0 || try == 10 {
				outs[i] = o
				break
			}
		}
	}
	s.c.check("ShareFetch opening the session", outs[0], outs[1])
}

// TestShareFetch walks records through a share group on both brokers, as
// the file's comment says.
func TestShareFetch(t *testing.T) {
	c := newCase(t)
	const topic, group = "diff-share-fetch", "diff-share-fetch"
	createTopic(c, newTopic(topic, 1, 1))
	for range 3 { // offsets 0-5, two records a batch
		produceOK(c, topic, 0, batch(batchHeader{}, records(2, 1000)...))
	}
	ids := topicIDSet{}
	ids.add(t, topic)
	c.compare(incrementalAlter(false, kmsg.ConfigResourceTypeGroupConfig, group, [3]string{"set", "share.auto.offset.reset", "earliest"}))
	waitCoordinator(t, group)
	joinAssigned(c, group, shareMemberA, 1, topic)
	s := &shareSession{c: c, ids: ids, group: group, member: shareMemberA, topic: topic}
	s.dial(t)
	x := &shareSession{c: c, ids: ids, group: group, member: shareMemberX, topic: topic}

	t.Run("acks at epoch 0", func(t *testing.T) {
		newCase(t).compareEach(-1, func(kafka bool) kmsg.Request {
			return x.fetch(kafka, 0, 0, ackRange{0, 0, []int8{ackAccept}})
		})
	})
	t.Run("no session", func(t *testing.T) {
		newCase(t).compareEach(-1, func(kafka bool) kmsg.Request { return x.fetch(kafka, 1, 0) })
	})
	t.Run("acknowledge, no session", func(t *testing.T) {
		newCase(t).compareEach(-1, func(kafka bool) kmsg.Request {
			return x.acknowledge(kafka, 1, ackRange{0, 0, []int8{ackAccept}})
		})
	})
	t.Run("empty member id", func(t *testing.T) {
		newCase(t).compareEach(-1, func(kafka bool) kmsg.Request {
			req := x.fetch(kafka, 0, 0)
			req.MemberID = kmsg.StringPtr("")
			return req
		})
	})

	s.open() // acquires 0-5, delivery count 1
	c.compare(describeShareOffsets(group, map[string][]int32{topic: {0}}))
	t.Run("wrong epoch", func(t *testing.T) {
		s.c = newCase(t)
		s.send(7, func(kafka bool, e int32) kmsg.Request { return s.fetch(kafka, e, 0) })
	})
	t.Run("acknowledge at epoch 0", func(t *testing.T) {
		s.c = newCase(t)
		s.send(0, func(kafka bool, e int32) kmsg.Request {
			return s.acknowledge(kafka, 0, ackRange{0, 0, []int8{ackAccept}})
		})
	})
	steps := []struct {
		name string
		acks []ackRange
	}{
		{"accept, release, reject, gap", []ackRange{{0, 0, []int8{ackAccept}}, {1, 1, []int8{ackRelease}}, {2, 2, []int8{ackReject}}, {3, 3, []int8{ackGap}}}},
		{"an offset not acquired", []ackRange{{1, 1, []int8{ackAccept}}}},
		{"an offset acknowledged before", []ackRange{{0, 0, []int8{ackAccept}}}},
		{"an offset past the end", []ackRange{{4, 9, []int8{ackAccept}}}},
		{"types not one per offset", []ackRange{{4, 5, []int8{ackAccept, ackAccept, ackAccept}}}},
		{"first after last", []ackRange{{5, 4, []int8{ackAccept}}}},
		{"unknown type", []ackRange{{4, 4, []int8{9}}}},
		{"overlapping batches", []ackRange{{4, 5, []int8{ackAccept}}, {5, 5, []int8{ackAccept}}}},
		{"overlapping by two", []ackRange{{4, 5, []int8{ackAccept}}, {4, 5, []int8{ackAccept}}}},
		{"no types", []ackRange{{4, 4, nil}}},
		// Kafka checks every batch's form before any offset's state.
		{"not acquired, then unknown type", []ackRange{{1, 1, []int8{ackAccept}}, {4, 4, []int8{9}}}},
		{"not acquired and past the end", []ackRange{{1, 9, []int8{ackAccept}}}},
	}
	for _, st := range steps {
		t.Run("acknowledge "+st.name, func(t *testing.T) {
			s.c = newCase(t)
			s.send(0, func(kafka bool, e int32) kmsg.Request { return s.acknowledge(kafka, e, st.acks...) })
			s.c.compare(describeShareOffsets(group, map[string][]int32{topic: {0}}))
		})
	}

	describe := func() { s.c.compare(describeShareOffsets(group, map[string][]int32{topic: {0}})) }
	acknowledge := func(acks ...ackRange) {
		s.send(0, func(kafka bool, e int32) kmsg.Request { return s.acknowledge(kafka, e, acks...) })
	}
	fetch := func(wait int32, acks ...ackRange) {
		s.send(0, func(kafka bool, e int32) kmsg.Request { return s.fetch(kafka, e, wait, acks...) })
	}

	// Redelivery: records released by ShareAcknowledge (durable before
	// its answer, on both brokers) come back at the next ShareFetch one
	// delivery count higher: 1, 4 and 5 at deliveries 2, 3 and 4.
	release := []ackRange{{4, 5, []int8{ackRelease}}}
	for delivery := 2; delivery <= 4; delivery++ {
		t.Run(fmt.Sprintf("release, fetch: delivery %d", delivery), func(t *testing.T) {
			s.c = newCase(t)
			acknowledge(release...)
			fetch(5000)
			describe()
		})
		release = []ackRange{{1, 1, []int8{ackRelease}}, {4, 5, []int8{ackRelease}}}
	}
	// At the last attempt (delivery 5, share.delivery.count.limit) each
	// record comes alone, a fetch each; released there, they are archived
	// and the SPSO passes them.
	t.Run("release, fetch: last attempts alone", func(t *testing.T) {
		s.c = newCase(t)
		acknowledge(release...)
		for range 3 {
			fetch(5000)
		}
	})
	t.Run("release at the limit archives", func(t *testing.T) {
		s.c = newCase(t)
		acknowledge(release...)
		describe()
		fetch(200) // nothing left to acquire: both answer empty
	})

	// Releases inside a ShareFetch (offsets 6-9, new records). With no
	// other record available, both answer the released records again,
	// delivered twice: Skein at once, Kafka once its write is done (at
	// MaxWaitMillis). With another record available, Kafka answers only
	// that one (differences.go).
	for range 2 {
		produceOK(c, topic, 0, batch(batchHeader{}, records(2, 1000)...))
	}
	t.Run("fetch new records", func(t *testing.T) {
		s.c = newCase(t)
		fetch(5000)
	})
	t.Run("fetch releasing, nothing else available", func(t *testing.T) {
		s.c = newCase(t)
		fetch(5000, ackRange{6, 9, []int8{ackRelease}})
	})
	t.Run("fetch releasing, others available", func(t *testing.T) {
		s.c = newCase(t)
		acknowledge(ackRange{8, 9, []int8{ackRelease}})
		fetch(5000, ackRange{6, 6, []int8{ackRelease}})
		describe()
	})

	t.Run("close", func(t *testing.T) {
		s.c = newCase(t)
		s.send(0, func(kafka bool, _ int32) kmsg.Request { return s.fetch(kafka, -1, 0) })
		s.send(0, func(kafka bool, _ int32) kmsg.Request { return s.acknowledge(kafka, -1) })
		s.send(0, func(kafka bool, e int32) kmsg.Request { return s.fetch(kafka, e, 0) })
	})
	c.compare(shareHeartbeat(group, shareMemberA, -1))
	c.compare(describeShareOffsets(group, map[string][]int32{topic: {0}}))
}
