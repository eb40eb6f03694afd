package console

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

type groupsJSON struct {
	Groups []*groupJSON `json:"groups"`
}

type groupJSON struct {
	Name string `json:"name"`
	// Type is classic, consumer (KIP-848), share (KIP-932) or streams
	// (KIP-1071).
	Type        string `json:"type"`
	State       string `json:"state"`
	Protocol    string `json:"protocol"`
	Coordinator int32  `json:"coordinator"`
	// Members is null when the group's type is not described here
	// (streams groups).
	Members *int `json:"members"`
	// Lag sums the lag of the partitions with an offset; -1 when it is
	// not known.
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

// groups is GET /ui/api/groups: every group the user may describe, with
// its member count and total lag.
func (a *api) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	listed, err := adm.ListGroupsByType(ctx, nil)
	if err != nil && len(listed) == 0 {
		fail(w, err)
		return
	}
	out := groupsJSON{Groups: []*groupJSON{}}
	byType := map[string][]string{}
	byName := map[string]*groupJSON{}
	for _, g := range listed.Sorted() {
		t := g.GroupType
		if t == "" {
			t = "classic"
		}
		j := &groupJSON{Name: g.Group, Type: t, State: g.State, Protocol: g.ProtocolType, Coordinator: g.Coordinator, Lag: -1}
		out.Groups = append(out.Groups, j)
		byName[g.Group] = j
		byType[t] = append(byType[t], g.Group)
	}
	count := func(group string, n int, err error) {
		if j := byName[group]; j != nil {
			if err != nil {
				j.Error = errName(err)
				return
			}
			j.Members = &n
		}
	}
	if gs := byType["classic"]; len(gs) > 0 {
		described, _ := adm.DescribeGroups(ctx, gs...)
		for _, d := range described {
			count(d.Group, len(d.Members), d.Err)
			if j := byName[d.Group]; j != nil && d.Err == nil && d.Protocol != "" {
				j.Protocol = d.ProtocolType + "/" + d.Protocol
			}
		}
	}
	if gs := byType["consumer"]; len(gs) > 0 {
		described, _ := adm.DescribeConsumerGroups(ctx, gs...)
		for _, d := range described {
			count(d.Group, len(d.Members), d.Err)
		}
	}
	var shareStarts kadm.DescribedShareGroupsOffsets
	if gs := byType["share"]; len(gs) > 0 {
		described, _ := adm.DescribeShareGroups(ctx, gs...)
		for _, d := range described {
			count(d.GroupID, len(d.Members), d.Err)
		}
		shareStarts, _ = adm.DescribeShareGroupOffsets(ctx, gs...)
	}
	// The lags: the committed offsets of classic and consumer groups
	// (OffsetFetch), the share-partition start offsets of share groups,
	// against the end offsets of every topic either names, listed once.
	var committed kadm.FetchOffsetsResponses
	if gs := append(slices.Clone(byType["classic"]), byType["consumer"]...); len(gs) > 0 {
		committed = adm.FetchManyOffsets(ctx, gs...)
	}
	topics := map[string]bool{}
	for _, c := range committed {
		for t := range c.Fetched {
			topics[t] = true
		}
	}
	for _, s := range shareStarts {
		for t := range s.Offsets {
			topics[t] = true
		}
	}
	ends := endOffsets(ctx, adm, topics)
	for _, c := range committed {
		if j := byName[c.Group]; j != nil && c.Err == nil {
			j.Lag = 0
			c.Fetched.Each(func(o kadm.OffsetResponse) {
				if e, ok := ends.Lookup(o.Topic, o.Partition); ok && e.Err == nil && o.Err == nil && o.At >= 0 {
					j.Lag += max(0, e.Offset-o.At)
				}
			})
		}
	}
	for _, s := range shareStarts {
		if j := byName[s.Group]; j != nil && s.Err == nil {
			j.Lag = 0
			for t, ps := range s.Offsets {
				for p, o := range ps {
					if e, ok := ends.Lookup(t, p); ok && e.Err == nil && o.Err == nil && o.StartOffset >= 0 {
						j.Lag += max(0, e.Offset-o.StartOffset)
					}
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// endOffsets lists the end offsets of topics, nil when there are none
// or the listing fails (the lags are then unknown).
func endOffsets(ctx context.Context, adm *kadm.Client, topics map[string]bool) kadm.ListedOffsets {
	if len(topics) == 0 {
		return nil
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	ends, _ := adm.ListEndOffsets(ctx, names...)
	return ends
}

type groupDetailJSON struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Protocol    string `json:"protocol"`
	Coordinator int32  `json:"coordinator"`
	// Epoch and AssignmentEpoch are a consumer or share group's, -1 for
	// a classic group.
	Epoch           int32         `json:"epoch"`
	AssignmentEpoch int32         `json:"assignment_epoch"`
	Members         []*memberJSON `json:"members"`
	Offsets         []*offsetJSON `json:"offsets"`
	// Lag sums the partitions' lags.
	Lag int64 `json:"lag"`
}

type memberJSON struct {
	MemberID   string  `json:"member_id"`
	InstanceID *string `json:"instance_id"`
	ClientID   string  `json:"client_id"`
	Host       string  `json:"host"`
	// Assignment is topic → partitions.
	Assignment map[string][]int32 `json:"assignment"`
}

// offsetJSON is one partition of a group: its committed offset (of a
// share group, the share-partition start offset), the partition's end
// offset and the difference.
type offsetJSON struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Member is the member assigned the partition, "" for none.
	Member string `json:"member"`
	// Committed is -1 for an assigned partition with no commit.
	Committed int64 `json:"committed"`
	// StartOffset is a share group's share-partition start offset (the
	// same as committed), absent for other groups.
	StartOffset *int64 `json:"start_offset,omitempty"`
	EndOffset   int64  `json:"end_offset"`
	// Lag is end_offset - committed, the whole partition (end - log
	// start) with no commit; -1 when unknown.
	Lag   int64  `json:"lag"`
	Error string `json:"error,omitempty"`
}

// group is GET /ui/api/groups/{group}.
func (a *api) group(w http.ResponseWriter, r *http.Request) {
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	name := r.PathValue("group")
	out := &groupDetailJSON{Name: name, Members: []*memberJSON{}, Offsets: []*offsetJSON{}, Epoch: -1, AssignmentEpoch: -1}
	// The group's type first: DescribeGroups answers GROUP_ID_NOT_FOUND
	// for the KIP-848 and share groups, as Kafka 4 does.
	out.Type = "classic"
	if listed, err := adm.ListGroupsByType(ctx, nil); err == nil {
		if g, ok := listed[name]; ok && g.GroupType != "" {
			out.Type = g.GroupType
		}
	}
	assigned := map[string]map[int32]string{} // topic → partition → member
	assign := func(m *memberJSON, t string, ps []int32) {
		slices.Sort(ps)
		m.Assignment[t] = ps
		if assigned[t] == nil {
			assigned[t] = map[int32]string{}
		}
		for _, p := range ps {
			assigned[t][p] = m.MemberID
		}
	}
	switch out.Type {
	case "consumer":
		described, err := adm.DescribeConsumerGroups(ctx, name)
		d, ok := oneGroup(w, described, err, name, func(d kadm.DescribedConsumerGroup) error { return d.Err })
		if !ok {
			return
		}
		out.State, out.Protocol, out.Coordinator, out.Epoch, out.AssignmentEpoch = d.State, d.AssignorName, d.Coordinator.NodeID, d.Epoch, d.AssignmentEpoch
		for _, m := range d.Members {
			mj := &memberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
			for t, ps := range m.Assignment {
				assign(mj, t, slices.Collect(maps.Keys(ps)))
			}
			out.Members = append(out.Members, mj)
		}
	case "share":
		described, err := adm.DescribeShareGroups(ctx, name)
		d, ok := oneGroup(w, described, err, name, func(d kadm.DescribedShareGroup) error { return d.Err })
		if !ok {
			return
		}
		out.State, out.Protocol, out.Coordinator, out.Epoch, out.AssignmentEpoch = d.GroupState, d.Assignor, d.Coordinator.NodeID, d.GroupEpoch, d.AssignmentEpoch
		for _, m := range d.Members {
			mj := &memberJSON{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
			for t, ps := range m.Assignment {
				assign(mj, t, slices.Collect(maps.Keys(ps)))
			}
			out.Members = append(out.Members, mj)
		}
		a.shareOffsets(ctx, adm, out, assigned)
		writeJSON(w, http.StatusOK, out)
		return
	case "classic":
		described, err := adm.DescribeGroups(ctx, name)
		d, ok := oneGroup(w, described, err, name, func(d kadm.DescribedGroup) error { return d.Err })
		if !ok {
			return
		}
		out.State, out.Coordinator, out.Protocol = d.State, d.Coordinator.NodeID, d.ProtocolType
		if d.Protocol != "" {
			out.Protocol += "/" + d.Protocol
		}
		for _, m := range d.Members {
			mj := &memberJSON{MemberID: m.MemberID, InstanceID: m.InstanceID, ClientID: m.ClientID, Host: m.ClientHost, Assignment: map[string][]int32{}}
			if c, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range c.Topics {
					assign(mj, t.Topic, slices.Clone(t.Partitions))
				}
			}
			out.Members = append(out.Members, mj)
		}
	default:
		writeError(w, http.StatusNotImplemented, "console: "+out.Type+" groups are not described here")
		return
	}
	committed, err := adm.FetchOffsets(ctx, name)
	if err != nil {
		fail(w, err)
		return
	}
	topics := map[string]bool{}
	for t := range committed {
		topics[t] = true
	}
	for t := range assigned {
		topics[t] = true
	}
	ends := endOffsets(ctx, adm, topics)
	starts := kadm.ListedOffsets{}
	if len(topics) > 0 {
		starts, _ = adm.ListStartOffsets(ctx, slices.Collect(maps.Keys(topics))...)
	}
	seen := map[string]map[int32]bool{}
	add := func(t string, p int32, at int64, err error) {
		if seen[t] == nil {
			seen[t] = map[int32]bool{}
		}
		seen[t][p] = true
		o := &offsetJSON{Topic: t, Partition: p, Member: assigned[t][p], Committed: at, EndOffset: -1, Lag: -1}
		e, ok := ends.Lookup(t, p)
		switch {
		case err != nil:
			o.Error = errName(err)
		case !ok || e.Err != nil:
			o.Error = errName(errors.Join(e.Err))
		default:
			o.EndOffset = e.Offset
			if at >= 0 {
				o.Lag = max(0, e.Offset-at)
			} else if s, ok := starts.Lookup(t, p); ok && s.Err == nil {
				o.Lag = max(0, e.Offset-s.Offset)
			}
		}
		if o.Lag > 0 {
			out.Lag += o.Lag
		}
		out.Offsets = append(out.Offsets, o)
	}
	committed.Each(func(o kadm.OffsetResponse) { add(o.Topic, o.Partition, o.At, o.Err) })
	for t, ps := range assigned {
		for p := range ps {
			if !seen[t][p] {
				add(t, p, -1, nil)
			}
		}
	}
	sortOffsets(out.Offsets)
	writeJSON(w, http.StatusOK, out)
}

// shareOffsets fills a share group's partitions from its share-partition
// start offsets (DescribeShareGroupOffsets).
func (a *api) shareOffsets(ctx context.Context, adm *kadm.Client, out *groupDetailJSON, assigned map[string]map[int32]string) {
	described, err := adm.DescribeShareGroupOffsets(ctx, out.Name)
	d := described[out.Name]
	if err == nil {
		err = d.Err
	}
	if err != nil {
		out.Offsets = append(out.Offsets, &offsetJSON{Error: errName(err), Committed: -1, EndOffset: -1, Lag: -1})
		return
	}
	topics := map[string]bool{}
	for t := range d.Offsets {
		topics[t] = true
	}
	ends := endOffsets(ctx, adm, topics)
	for t, ps := range d.Offsets {
		for p, s := range ps {
			start := s.StartOffset
			o := &offsetJSON{Topic: t, Partition: p, Member: assigned[t][p], Committed: start, StartOffset: &start, EndOffset: -1, Lag: -1}
			if s.Err != nil {
				o.Error = errName(s.Err)
			} else if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
				o.EndOffset = e.Offset
				if start >= 0 {
					o.Lag = max(0, e.Offset-start)
					out.Lag += o.Lag
				}
			}
			out.Offsets = append(out.Offsets, o)
		}
	}
	sortOffsets(out.Offsets)
}

func sortOffsets(os []*offsetJSON) {
	slices.SortFunc(os, func(a, b *offsetJSON) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
}
