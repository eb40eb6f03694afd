package node

import (
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/share"
)

// shareStateTimeout bounds a share.StateClient request, retries included:
// a share coordinator answers once its records are replicated
// (share.coordinator.write.timeout.ms) and a moved one loads its
// partition first.
const shareStateTimeout = 15 * time.Second

// newShareStates returns the node's client of the share coordinators,
// which the share-partition actors and group coordinators use.
func (n *Node) newShareStates() *share.StateClient {
	return &share.StateClient{System: n.sys, NodeID: n.cfg.NodeID, Incarnation: n.incarnation, Image: n.image.Load,
		Timeout: shareStateTimeout, EnsureTopic: n.ensureShareStateTopic}
}

var errNotServing = errors.New("node: the Kafka listener does not serve yet")

// ensureShareStateTopic creates __share_group_state through the
// controller as FindCoordinator does (transport.API.EnsureShareStateTopic):
// a share coordinator's first client may come before any FindCoordinator
// of key type 2.
func (n *Node) ensureShareStateTopic() error {
	api := n.shareAPI.Load()
	if api == nil {
		return errNotServing
	}
	return api.EnsureShareStateTopic()
}

// spawnShareState spawns the share coordinator, "sharestate": an actor
// per __share_group_state partition this node leads (share.CoordinatorProps),
// told by the metadata actor (share.Leading).
func (n *Node) spawnShareState(c actor.Context) (*actor.PID, error) {
	ms := func(v int32) time.Duration { return time.Duration(v) * time.Millisecond }
	return c.SpawnNamed(share.CoordinatorProps(share.CoordinatorConfig{
		NodeID: n.cfg.NodeID, Registry: n.registry, Image: n.image.Load,
		SnapshotEvery: int(n.cfg.ShareCoordinatorSnapshotUpdateRecordsPerSnapshot),
		WriteTimeout:  ms(n.cfg.ShareCoordinatorWriteTimeoutMs),
		PruneInterval: ms(n.cfg.ShareCoordinatorStateTopicPruneIntervalMs),
		ColdInterval:  ms(n.cfg.ShareCoordinatorColdPartitionSnapshotIntervalMs),
		Logger:        n.log,
	}, actors.NewBackoffStrategy(actors.Backoff{})), "sharestate")
}
