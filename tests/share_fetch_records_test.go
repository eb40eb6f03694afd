package tests

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchRecordsNotNull: in ShareFetchResponse, unlike
// FetchResponse, a partition's Records is not nullable (Kafka 4.2's
// ShareFetchResponse.json), and Kafka's Java client refuses an answer
// that has it null ("non-nullable field records was serialized as
// null"), in its network thread, after which it never fetches those
// partitions again (found by the interop suite's KafkaShareConsumer
// check). A partition is answered without records in two cases: new to
// the session with nothing to acquire, and carrying acknowledgements
// when nothing more is to be had. Both must carry empty Records, never
// null; kmsg decodes null as a nil slice and empty as a non-nil one.
func TestShareFetchRecordsNotNull(t *testing.T) {
	b := startBroker(t)
	const topic, group, member = "share-null", "sg-null", "44444444-4444-4444-4444-444444444444"
	created, err := b.admin().CreateTopic(ctxFor(t), 1, 1, nil, topic)
	if err != nil {
		t.Fatal(err)
	}
	raw := b.client()
	defer raw.Close()
	setGroupConfig(t, raw, group, "share.auto.offset.reset", "earliest")
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{topic}
	resp := rawReq[*kmsg.ShareGroupHeartbeatResponse](t, raw, hb)
	for deadline := time.Now().Add(time.Minute); resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		resp = rawReq[*kmsg.ShareGroupHeartbeatResponse](t, raw, hb)
	}
	wantErr(t, "join", resp.ErrorCode, nil)

	fetch := func(what string, epoch int32, ack *kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		req.MaxWaitMillis, req.MaxBytes, req.MaxRecords, req.BatchSize = 0, 1<<20, 100, 100
		p := kmsg.NewShareFetchRequestTopicPartition()
		if ack != nil {
			p.AcknowledgementBatches = append(p.AcknowledgementBatches, *ack)
		}
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID, rt.Partitions = created.ID, []kmsg.ShareFetchRequestTopicPartition{p}
		req.Topics = append(req.Topics, rt)
		// The share-partition may still be loading its state: ask again,
		// as a client does, until the answer has no error.
		for deadline := time.Now().Add(time.Minute); ; {
			r := rawReq[*kmsg.ShareFetchResponse](t, raw, req)
			if r.ErrorCode == 0 && len(r.Topics) == 0 && epoch > 0 && ack == nil {
				// A partition the session has, with nothing to report, is
				// left out of the answer, as in Kafka.
				return kmsg.NewShareFetchResponseTopicPartition()
			}
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				t.Fatalf("%s: error %d, topics %+v", what, r.ErrorCode, r.Topics)
			}
			got := r.Topics[0].Partitions[0]
			if got.ErrorCode == 0 || time.Now().After(deadline) {
				wantErr(t, what, got.ErrorCode, nil)
				wantErr(t, what+": acknowledgements", got.AcknowledgeErrorCode, nil)
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// New to the session, the topic empty.
	if p := fetch("an empty partition new to the session", 0, nil); p.Records == nil || len(p.AcquiredRecords) != 0 {
		t.Errorf("an empty partition new to the session: Records %v (nil: null on the wire), acquired %v", p.Records, p.AcquiredRecords)
	}
	if err := raw.ProduceSync(ctxFor(t), &kgo.Record{Topic: topic, Value: []byte("one")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The share-partition may still be reading its state: an answer
	// without records then is right (MaxWaitMillis 0), and a client polls
	// again.
	epoch := int32(1)
	p := fetch("a record", epoch, nil)
	for deadline := time.Now().Add(time.Minute); len(p.AcquiredRecords) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		epoch++
		p = fetch("a record", epoch, nil)
	}
	if len(p.AcquiredRecords) != 1 || p.AcquiredRecords[0].FirstOffset != 0 || p.AcquiredRecords[0].LastOffset != 0 || len(p.Records) == 0 {
		t.Fatalf("a record: acquired %+v, %d bytes of records", p.AcquiredRecords, len(p.Records))
	}
	// Accepted, with nothing more to acquire: in the answer for the
	// acknowledgement only.
	ack := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ack.FirstOffset, ack.LastOffset, ack.AcknowledgeTypes = 0, 0, []int8{1}
	if p := fetch("an acknowledgement, nothing more to acquire", epoch+1, &ack); p.Records == nil || len(p.AcquiredRecords) != 0 {
		t.Errorf("an acknowledgement, nothing more to acquire: Records %v (nil: null on the wire), acquired %v", p.Records, p.AcquiredRecords)
	}
}
