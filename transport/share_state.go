package transport

// What the share-group state APIs (83-87) share: the state topic's
// creation, the local share coordinator they ask, and their answers'
// error codes. The share coordinator itself is package share's sharestate
// actors; Skein's own share-partitions reach it over remoting
// (share.StateClient), these APIs serve Kafka's tools.

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/share"
)

// EnsureShareStateTopic creates __share_group_state if it does not exist
// and waits for its partitions to load here: Kafka's configs for it
// (ShareCoordinatorConfig, KIP-932) are cleanup.policy delete with
// infinite retention (a share coordinator deletes what no share-partition
// needs with DeleteRecords; time must not), 100 MiB segments, no broker
// compression, min.insync.replicas at most the replicas it will have.
// Called by FindCoordinator (key type 2) and by the node's
// share.StateClient; nil once the topic exists.
func (a *API) EnsureShareStateTopic() error {
	if err := a.ensureShareStateTopic(); err != nil {
		return err
	}
	return nil
}

func (a *API) ensureShareStateTopic() *kerr.Error {
	rf := a.Node.ShareCoordinatorStateTopicReplicationFactor
	minISR := min(a.Node.ShareCoordinatorStateTopicMinISR, max(min(rf, int16(len(a.Image().LiveBrokerIDs()))), 1))
	return a.ensureInternalTopic(controller.NewTopic{
		Name: share.StateTopic, NumPartitions: a.Node.ShareCoordinatorStateTopicNumPartitions, ReplicationFactor: rf,
		Configs: map[string]string{"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
			"min.insync.replicas": fmt.Sprint(minISR), "segment.bytes": fmt.Sprint(a.Node.ShareCoordinatorStateTopicSegmentBytes)},
	}, "share.coordinator.state.topic.replication.factor")
}

// askShareState asks this node's share coordinator (node/<id>/sharestate)
// one key's request and waits for the answer: NOT_COORDINATOR when this
// node does not lead the key's state partition (or runs no coordinator),
// COORDINATOR_NOT_AVAILABLE when no answer came in time.
func (a *API) askShareState(msg any) *share.StateResult {
	pid := actor.NewPID(a.System.Address(), "node/"+strconv.Itoa(int(a.Node.NodeID))+"/sharestate")
	res, err := actors.Ask(a.System, pid, msg, a.RequestTimeout)
	if r, ok := res.(*share.StateResult); ok && err == nil {
		return r
	}
	if errors.Is(err, actors.ErrDeadLetter) {
		return &share.StateResult{Code: kerr.NotCoordinator.Code, Message: kerr.NotCoordinator.Message}
	}
	return &share.StateResult{Code: kerr.CoordinatorNotAvailable.Code, Message: kerr.CoordinatorNotAvailable.Message}
}

// shareStateEach runs ask for every partition of a share-group state
// request in parallel, each on its own goroutine, and waits for them:
// each asks the coordinator of its own key, which may be on another
// node's partition of the state topic (NOT_COORDINATOR then, as Kafka
// answers per partition).
func shareStateEach(n int, ask func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ask(i)
		}()
	}
	wg.Wait()
}

// errMessage is a StateResult's message for the wire: nil without an
// error.
func errMessage(r *share.StateResult) *string {
	if r.Code == 0 {
		return nil
	}
	m := r.Message
	return &m
}
