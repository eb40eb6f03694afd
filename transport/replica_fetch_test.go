package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

// TestReplicaFetchChecksTheFollower sends followers' Fetches (ReplicaState
// set) to a node whose image knows broker 2 in incarnation 7: another
// incarnation, or a broker it does not know, is refused
// STALE_BROKER_EPOCH; the known one is answered per partition: a topic id
// the node does not know is UNKNOWN_TOPIC_ID.
func TestReplicaFetchChecksTheFollower(t *testing.T) {
	im := image.Empty()
	im.Brokers[2] = image.Broker{ID: 2, Host: "127.0.0.1", Port: 1, Incarnation: 7}
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	s := NewServer(cfg, NewAPI(Deps{Image: func() *image.Image { return im }}, nil))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.Close(ctx)
	})
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fetch := func(corr int32, id int32, epoch int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 18
		req.ReplicaState.ID, req.ReplicaState.Epoch = id, epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 30_000, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte{1}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		body := rawRequest(t, nc, 1, 18, corr, append([]byte{0}, req.AppendTo(nil)...))
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		if err := resp.ReadFrom(body[1:]); err != nil { // past the header's tags
			t.Fatal(err)
		}
		return resp
	}
	for i, c := range []struct {
		id    int32
		epoch int64
	}{{2, 8}, {3, 7}} {
		if resp := fetch(int32(i+1), c.id, c.epoch); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
			t.Errorf("broker %d incarnation %d: error %d, want STALE_BROKER_EPOCH", c.id, c.epoch, resp.ErrorCode)
		}
	}
	resp := fetch(3, 2, 7)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("the known follower's fetch: %+v", resp)
	}
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code || p.HighWatermark != -1 || p.DivergingEpoch.Epoch != -1 {
		t.Errorf("a topic id the node does not know: error %d, high watermark %d, diverging epoch %d; want UNKNOWN_TOPIC_ID, -1, -1",
			p.ErrorCode, p.HighWatermark, p.DivergingEpoch.Epoch)
	}
}
