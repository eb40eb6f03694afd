package tests

import (
	"encoding/base64"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's inter-broker share-group state APIs (83-87) over TCP, as Kafka's
// tools send them: FindCoordinator with key type 2 names the share
// coordinator; initialization, a leader's read (which records its epoch),
// a write and a summary are answered from its state; an older leader's
// write is fenced. After a restart on the same data directory the state
// read back is the same, and the old leader is still fenced: the state
// and the epochs were durable in __share_group_state.
func TestShareGroupStateAPIs(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 2, 1, nil, "st"); err != nil {
		t.Fatal(err)
	}
	details, err := b.admin().ListTopics(ctx, "st")
	if err != nil || details["st"].Err != nil {
		t.Fatal(err, details["st"].Err)
	}
	id := details["st"].ID
	const group = "sg"

	// ask sends req to the share coordinator of group's state of st-0,
	// found anew each time, until its answer's codes are not the
	// coordinator's moving (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS),
	// and returns it.
	ask := func(cl *kgo.Client, req kmsg.Request) kmsg.Response {
		t.Helper()
		var resp kmsg.Response
		eventually(t, "the share coordinator answering", func() bool {
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorType = 2
			fc.CoordinatorKeys = []string{group + ":" + base64.RawURLEncoding.EncodeToString(id[:]) + ":0"}
			fr, err := fc.RequestWith(ctx, cl)
			if err != nil || len(fr.Coordinators) != 1 || fr.Coordinators[0].ErrorCode != 0 {
				return false
			}
			r, err := cl.Broker(int(fr.Coordinators[0].NodeID)).Request(ctx, req)
			if err != nil {
				return false
			}
			for _, code := range errorCodes(r) {
				if code == kerr.NotCoordinator.Code || code == kerr.CoordinatorLoadInProgress.Code {
					return false
				}
			}
			resp = r
			return true
		})
		return resp
	}
	code := func(resp kmsg.Response) int16 {
		codes := errorCodes(resp)
		if len(codes) == 0 {
			return 0
		}
		return codes[0]
	}

	initReq := kmsg.NewPtrInitializeShareGroupStateRequest()
	initReq.GroupID = group
	initReq.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: id,
		Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0, StateEpoch: 0, StartOffset: 5}}}}
	read := func(leaderEpoch int32) *kmsg.ReadShareGroupStateRequest {
		r := kmsg.NewPtrReadShareGroupStateRequest()
		r.GroupID = group
		r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: id,
			Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0, LeaderEpoch: leaderEpoch}}}}
		return r
	}
	write := func(leaderEpoch int32) *kmsg.WriteShareGroupStateRequest {
		r := kmsg.NewPtrWriteShareGroupStateRequest()
		r.GroupID = group
		p := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		p.Partition, p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount = 0, 0, leaderEpoch, 5, 5
		p.StateBatches = []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{{FirstOffset: 5, LastOffset: 9, DeliveryState: 2, DeliveryCount: 1}}
		r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{p}}}
		return r
	}

	cl := b.client()
	if c := code(ask(cl, read(1))); c != kerr.InvalidRequest.Code {
		t.Fatalf("read before any state: %s, want INVALID_REQUEST", kerr.ErrorForCode(c))
	}
	if c := code(ask(cl, initReq)); c != 0 {
		t.Fatalf("initialize: %v", kerr.ErrorForCode(c))
	}
	if r := ask(cl, read(1)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]; r.ErrorCode != 0 || r.StartOffset != 5 || len(r.StateBatches) != 0 {
		t.Fatalf("read after initialize: %+v", r)
	}
	if c := code(ask(cl, write(1))); c != 0 {
		t.Fatalf("write: %v", kerr.ErrorForCode(c))
	}
	want := ask(cl, read(1)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]
	if want.ErrorCode != 0 || want.StartOffset != 5 || len(want.StateBatches) != 1 || want.StateBatches[0].LastOffset != 9 || want.StateBatches[0].DeliveryState != 2 {
		t.Fatalf("read after write: %+v", want)
	}
	summary := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	summary.GroupID = group
	summary.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id,
		Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
	if s := ask(cl, summary).(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[0]; s.ErrorCode != 0 || s.StartOffset != 5 || s.LeaderEpoch != 1 || s.DeliveryCompleteCount != 5 {
		t.Errorf("summary: %+v", s)
	}
	if c := code(ask(cl, write(0))); c != kerr.FencedLeaderEpoch.Code {
		t.Errorf("an older leader's write: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(c))
	}

	b.restart()
	cl = b.client()
	if got := ask(cl, read(-1)).(*kmsg.ReadShareGroupStateResponse).Topics[0].Partitions[0]; !reflect.DeepEqual(got, want) {
		t.Errorf("after a restart: %+v, want %+v", got, want)
	}
	if c := code(ask(cl, write(0))); c != kerr.FencedLeaderEpoch.Code {
		t.Errorf("after a restart, an older leader's write: %v, want FENCED_LEADER_EPOCH", kerr.ErrorForCode(c))
	}
	del := kmsg.NewPtrDeleteShareGroupStateRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	if c := code(ask(cl, del)); c != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(c))
	}
	if c := code(ask(cl, read(1))); c != kerr.InvalidRequest.Code {
		t.Errorf("read after delete: %s, want INVALID_REQUEST", kerr.ErrorForCode(c))
	}
	// The state topic is internal: Metadata says so, and clients cannot
	// produce to it.
	topics, err := b.admin().ListTopicsWithInternal(ctx, "__share_group_state")
	if err != nil || !topics["__share_group_state"].IsInternal {
		t.Errorf("__share_group_state: %+v, %v", topics["__share_group_state"], err)
	}
}
