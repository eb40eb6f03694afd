package transport

// ListTransactions: v0-2
//
// Behaviour:
//   - With an authorizer: only the transactional ids the client may
//     DESCRIBE.
//   - Lists the transactional ids this node coordinates (KIP-664; admin
//     clients ask every node), with their producer id and state, filtered
//     by state (unknown state names come back in UnknownStateFilters), by
//     producer id, by how long their transaction has run (v1+, KIP-994)
//     and by a regular expression on the id (v2+, RE2 syntax: Go's, close
//     to Java's for the patterns used; INVALID_REGULAR_EXPRESSION for one
//     that does not compile).

import (
	"regexp"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/txn"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(66, handler{min: 0, max: 2, handle: a.handleListTransactions})
	})
}

func (a *API) handleListTransactions(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ListTransactionsRequest)
	z := c.authz()
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
		f := txn.ListFilter{ProducerIDs: req.ProducerIDFilters, DurationMs: -1}
		if req.Version >= 1 {
			f.DurationMs = req.DurationFilterMillis
		}
		for _, name := range req.StateFilters {
			if s, ok := txn.ParseStatus(name); ok {
				f.States = append(f.States, s)
			} else {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
			}
		}
		var pattern *regexp.Regexp
		if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
			p, err := regexp.Compile(*req.TransactionalIDPattern)
			if err != nil {
				resp.ErrorCode = kerr.InvalidRegularExpression.Code
				return resp
			}
			pattern = p
		}
		if len(resp.UnknownStateFilters) > 0 && len(f.States) == 0 {
			return resp // only unknown states: nothing matches
		}
		if a.Txns == nil {
			return resp
		}
		pids := a.Txns.All()
		found := make([]*txn.ListResult, len(pids))
		var wg sync.WaitGroup
		for i, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// An actor gone meanwhile (its id expired, its
				// partition moved) is left out.
				if res, err := actors.Ask(a.System, pid, &txn.ListRequest{Filter: f}, a.RequestTimeout); err == nil {
					found[i], _ = res.(*txn.ListResult)
				}
			}()
		}
		wg.Wait()
		for _, r := range found {
			if r != nil && r.OK && (pattern == nil || pattern.MatchString(r.State.TransactionalID)) &&
				z.sees(describe, txnResource, r.State.TransactionalID) {
				resp.TransactionStates = append(resp.TransactionStates, r.State)
			}
		}
		return resp
	}
}
