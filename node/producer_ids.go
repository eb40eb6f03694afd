package node

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller"
)

// producerIDs hands out producer ids, to idempotent producers
// (InitProducerId) and transaction coordinators, from blocks the
// controller allocates and records durably, so that no id is ever given
// twice, across restarts too.
//
// Concurrency: safe for concurrent use.
type producerIDs struct {
	n          *Node
	mu         sync.Mutex
	next, last int64 // the current block is [next, last)
}

// producerIDsTimeout bounds the wait for a block of ids.
const producerIDsTimeout = 30 * time.Second

// take returns a fresh producer id; COORDINATOR_LOAD_IN_PROGRESS
// (retriable) when no block could be had from the controller.
func (p *producerIDs) take() (int64, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.last {
		res, err := actors.Ask(p.n.sys, p.n.children.Load().controller, &controller.AllocateProducerIDs{}, producerIDsTimeout)
		if err != nil {
			p.n.log.Warn().Err(err).Msg("allocating producer ids")
			return -1, kerr.CoordinatorLoadInProgress
		}
		r := res.(*controller.AllocateProducerIDsResult)
		if r.Err != nil {
			p.n.log.Warn().Str("err", r.Err.Message).Msg("allocating producer ids")
			return -1, kerr.CoordinatorLoadInProgress
		}
		p.next, p.last = r.First, r.First+r.Size
	}
	id := p.next
	p.next++
	return id, nil
}
