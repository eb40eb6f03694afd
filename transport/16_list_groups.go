package transport

// ListGroups: v0-5
//
// Behaviour:
//   - Lists the groups this node coordinates: each group's actor is asked
//     in parallel and answers if its group exists and passes the filters.
//     The first ListGroups after a start reads the __consumer_offsets
//     partitions this node leads to give an actor to every group they hold
//     (also those no client has used since), so later ones only ask.
//
// Version notes: v3 flexible; v4 states filter (KIP-518); v5 types filter
// (KIP-848; every group here is "classic").

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/coordinator"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(16, handler{min: 0, max: 5, handle: a.handleListGroups})
	})
}

func (a *API) handleListGroups(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ListGroupsRequest)
	a.loadAllGroups(c)
	groups := a.Groups.Groups()
	sort.Strings(groups)
	var calls []*groupCall
	for _, g := range groups {
		if call, err := a.startGroupRequest(c, g, req); err == nil {
			calls = append(calls, call)
		}
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		for _, call := range calls {
			if r, err := call.wait(c, a.RequestTimeout); err == nil {
				resp.Groups = append(resp.Groups, r.(*kmsg.ListGroupsResponse).Groups...)
			}
		}
		return resp
	}
}

// loadAllGroups gives an actor to every group of the __consumer_offsets
// partitions this node leads that were not scanned yet.
func (a *API) loadAllGroups(c *conn) {
	t := a.Image().Topic(coordinator.OffsetsTopic)
	if t == nil {
		return
	}
	for _, p := range t.Partitions {
		if p.Leader != a.Node.NodeID || a.Groups.Scanned(p.Index) {
			continue
		}
		// After a start the partition may still be loading: wait for it.
		done := make(chan struct{})
		timer := time.AfterFunc(a.RequestTimeout, func() { close(done) })
		a.Partitions.WaitReady(coordinator.OffsetsTopic, p.Index, done)
		timer.Stop()
		h, _, err := a.hosted(coordinator.OffsetsTopic, p.Index)
		if err != nil {
			continue
		}
		groups, rerr := coordinator.GroupsIn(h)
		if rerr != nil {
			a.Logger.Warn().Err(rerr).Int32("partition", p.Index).Msg("listing the groups of __consumer_offsets")
			continue
		}
		ok := true
		for _, g := range groups {
			if a.Groups.Get(g) == nil {
				if _, err := a.openGroup(g); err != nil {
					ok = false
				}
			}
		}
		if ok {
			a.Groups.MarkScanned(p.Index)
		}
	}
}
