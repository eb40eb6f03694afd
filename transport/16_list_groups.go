package transport

// ListGroups: v0-5
//
// Behaviour:
//   - Lists the groups this node coordinates that have an actor here
//     (every group used since the node started, and every group loaded
//     for a request since): each actor is asked in parallel and answers
//     if its group exists and passes the filters. A group known only from
//     __consumer_offsets records and not used since a restart is not
//     listed (TODO: load every group of a partition when it is taken over).
//
// Version notes: v3 flexible; v4 states filter (KIP-518); v5 types filter
// (KIP-848; every group here is "classic").

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
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
	var chans []<-chan kmsg.Response
	for _, g := range groups {
		if ch, err := a.startGroupRequest(c, g, req); err == nil {
			chans = append(chans, ch)
		}
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
		for _, ch := range chans {
			if r := waitGroup(ch, a.RequestTimeout); r != nil {
				resp.Groups = append(resp.Groups, r.(*kmsg.ListGroupsResponse).Groups...)
			}
		}
		return resp
	}
}
