package transport

// InitProducerId: v0-5
//
// Behaviour:
//   - Idempotent producers (no transactional id) get a fresh producer id
//     with epoch 0. Ids come from blocks the controller hands out and
//     records durably, so no id is ever given twice, across restarts too.
//   - A request naming a transactional id is refused until transactions
//     exist: TRANSACTIONAL_ID_AUTHORIZATION_FAILED is not right for that,
//     so it answers COORDINATOR_NOT_AVAILABLE (retriable, and what a broker
//     without a transaction coordinator answers).
//   - Without a transactional id, the id and epoch a v3+ producer sends
//     (KIP-360) are ignored and a new id is handed out, as Kafka does.
//
// Version notes: v2 flexible; v3 ProducerID/ProducerEpoch (KIP-360).

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(22, handler{min: 0, max: 5, handle: a.handleInitProducerID})
	})
}

// producerIDs hands out producer ids from blocks allocated by the
// controller. Safe for concurrent use.
type producerIDs struct {
	mu         sync.Mutex
	next, last int64 // the current block is [next, last)
}

func (p *producerIDs) take(a *API) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.last {
		res, err := a.askController(&controller.AllocateProducerIDs{})
		if err != nil {
			return 0, err
		}
		r := res.(*controller.AllocateProducerIDsResult)
		if r.Err != nil {
			return 0, r.Err
		}
		p.next, p.last = r.First, r.First+r.Size
	}
	id := p.next
	p.next++
	return id, nil
}

func (a *API) handleInitProducerID(_ *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.InitProducerIDRequest)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if req.TransactionalID != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		id, err := a.producerIDs.take(a)
		if err != nil {
			a.Logger.Warn().Err(err).Msg("allocating producer ids")
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}
}
