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
	// failing counts the takes refused since the last block came, so that
	// the failure is logged when it starts and when it ends, not per retry.
	failing int
}

// producerIDsTimeout bounds the wait for a block of ids.
const producerIDsTimeout = 30 * time.Second

// take returns a fresh producer id; COORDINATOR_LOAD_IN_PROGRESS
// (retriable) when no block could be had from the controller. A clustered
// node that knows no active controller answers so at once: asking would
// hold every InitProducerId of the node behind its lock for the whole
// timeout.
func (p *producerIDs) take() (int64, *kerr.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.last {
		if p.n.cfg.Clustered() && p.n.quorumStatus().Leader < 0 {
			return -1, p.refused("no active controller: " + controller.NoLeaderHint)
		}
		res, err := actors.Ask(p.n.sys, p.n.children.Load().controller, &controller.AllocateProducerIDs{}, producerIDsTimeout)
		if err != nil {
			return -1, p.refused(err.Error())
		}
		r := res.(*controller.AllocateProducerIDsResult)
		if r.Err != nil {
			return -1, p.refused(r.Err.Message)
		}
		if p.failing > 0 {
			p.n.log.Info().Int("refused", p.failing).Msg("allocating producer ids: a block came from the controller again")
			p.failing = 0
		}
		p.next, p.last = r.First, r.First+r.Size
	}
	id := p.next
	p.next++
	return id, nil
}

// refused counts a take that got no block, logging the first of a run.
func (p *producerIDs) refused(why string) *kerr.Error {
	if p.failing == 0 {
		p.n.log.Warn().Str("err", why).Msg("allocating producer ids: the controller gave no block; InitProducerId answers COORDINATOR_LOAD_IN_PROGRESS until it does")
	}
	p.failing++
	return kerr.CoordinatorLoadInProgress
}
