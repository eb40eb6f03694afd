package transport

// ListGroups: v0-5
//
// Behaviour:
//   - With an authorizer: every group for DESCRIBE on the cluster, otherwise
//     those the client may DESCRIBE, as Kafka.
//   - Lists the groups this node coordinates: each group's actor is asked
//     in parallel and answers if its group exists and passes the filters;
//     the groups without an actor (no client used them since this node
//     leads their partition) are answered from the index of their
//     __consumer_offsets partition (coordinator.Directory.ListIdle), which
//     the first use since this node leads it builds by reading the
//     partition once. Sorted by group id.
//
// Version notes: v3 flexible; v4 states filter (KIP-518); v5 types filter
// (KIP-848: "classic" or "consumer").

import (
	"slices"
	"sort"
	"strings"
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
	groups := a.Groups.Groups()
	sort.Strings(groups)
	asked := make(map[string]bool, len(groups))
	for _, g := range groups {
		asked[g] = true
	}
	idle := a.idleGroups(req, asked)
	z := c.authz()
	visible := func(g string) bool { return true }
	if !z.sees(describe, clusterResource, clusterName) {
		visible = func(g string) bool { return z.sees(describe, groupResource, g) }
	}
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
		resp.Groups = append(resp.Groups, idle...)
		resp.Groups = slices.DeleteFunc(resp.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return !visible(g.Group) })
		slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
		return resp
	}
}

// idleGroups lists the groups but those asked of the __consumer_offsets
// partitions this node leads, from their indexes.
func (a *API) idleGroups(req *kmsg.ListGroupsRequest, asked map[string]bool) []kmsg.ListGroupsResponseGroup {
	t := a.Image().Topic(coordinator.OffsetsTopic)
	if t == nil {
		return nil
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, p := range t.Partitions {
		if p.Leader != a.Node.NodeID {
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
		groups, lerr := a.Groups.ListIdle(h, req, asked)
		if lerr != nil {
			a.Logger.Warn().Err(lerr).Int32("partition", p.Index).Msg("listing the groups of __consumer_offsets")
			continue
		}
		out = append(out, groups...)
	}
	return out
}
