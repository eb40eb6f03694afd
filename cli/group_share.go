package cli

// Share groups (KIP-932) in skein group: described by ShareGroupDescribe
// and DescribeShareGroupOffsets (v1 carries each partition's lag), their
// start offsets set by AlterShareGroupOffsets and deleted by
// DeleteShareGroupOffsets, as kafka-share-groups does. What a
// share-partition holds in flight Kafka's APIs do not carry: the admin API
// of the partition's leader does (/v1/share-partitions), read when
// describe is given --admin.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/chaos"
)

// sharePartition is a share-partition as a node's admin API describes it
// (node's sharePartitionJSON).
type sharePartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Loaded      bool   `json:"loaded"`
	LeaderEpoch int32  `json:"leader_epoch"`
	InFlight    int64  `json:"in_flight"`
	Acquired    int    `json:"acquired"`
	Archived    int    `json:"archived"`
}

// sharePartitions reads a share group's share-partitions from the admin
// API of every node of admin (comma-separated), by topic and partition:
// each node has those it leads and serves. Of two answers for one
// partition (a leadership moving), the higher leader epoch's wins.
func sharePartitions(ctx context.Context, admin, group string, access chaos.Access) (map[string]map[int32]sharePartition, error) {
	out := map[string]map[int32]sharePartition{}
	hc := access.Client(0)
	path := "/v1/share-partitions?group=" + url.QueryEscape(group)
	for addr := range strings.SplitSeq(admin, ",") {
		if addr = strings.TrimSpace(addr); addr == "" {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, access.URL(addr, path), nil)
		if err != nil {
			return nil, usageError(fmt.Sprintf("--admin %s: %v", addr, err))
		}
		access.Authorize(req)
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("--admin %s: %w", addr, err)
		}
		var answer struct {
			SharePartitions []sharePartition `json:"share_partitions"`
		}
		err = nil
		if resp.StatusCode != http.StatusOK {
			// NB: a node older than /v1/share-partitions answers 404.
			err = fmt.Errorf("GET /v1/share-partitions: %s", resp.Status)
		} else {
			err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&answer)
		}
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("--admin %s: %w", addr, err)
		}
		for _, p := range answer.SharePartitions {
			if out[p.Topic] == nil {
				out[p.Topic] = map[int32]sharePartition{}
			}
			if prior, ok := out[p.Topic][p.Partition]; !ok || p.LeaderEpoch > prior.LeaderEpoch {
				out[p.Topic][p.Partition] = p
			}
		}
	}
	return out, nil
}

// shareGroupView is a share group (KIP-932): its ShareGroupDescribe
// answer, and each partition with share state or assigned to a member
// from DescribeShareGroupOffsets.
type shareGroupView struct {
	groupHeader
	GroupEpoch      int32         `json:"group_epoch"`
	AssignmentEpoch int32         `json:"assignment_epoch"`
	Assignor        string        `json:"assignor"`
	Members         []shareMember `json:"members"`
	Offsets         []shareOffset `json:"offsets"`
	TotalLag        int64         `json:"total_lag"`
	// admin: the share-partitions' in-flight records were asked of the
	// nodes (--admin).
	admin bool
}

// shareMember is a share group's member and the partitions assigned to it.
type shareMember struct {
	MemberID    string             `json:"member_id"`
	ClientID    string             `json:"client_id"`
	Host        string             `json:"host"`
	MemberEpoch int32              `json:"member_epoch"`
	Assignment  map[string][]int32 `json:"assignment"`
}

// shareOffset is a share-partition: its start offset (SPSO, null when
// the group has no state for it yet), the log end offset, the lag (the
// records from the SPSO to the high watermark not yet acknowledged or
// archived, KIP-1226) and how many members it is assigned to. With
// --admin (admin), what it holds: in-flight, acquired and archived
// records, null when no node given serves it; without, the three are
// left out.
type shareOffset struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	StartOffset     *int64 `json:"start_offset"`
	EndOffset       *int64 `json:"end_offset"`
	Lag             *int64 `json:"lag"`
	MembersAssigned int    `json:"members_assigned"`
	InFlight        *int64 `json:"in_flight,omitempty"`
	Acquired        *int   `json:"acquired,omitempty"`
	Archived        *int   `json:"archived,omitempty"`
	Error           string `json:"error,omitempty"`
	admin           bool
}

// MarshalJSON prints in_flight, acquired and archived, null when not
// known, when they were asked for.
func (o shareOffset) MarshalJSON() ([]byte, error) {
	type plain shareOffset // without the method
	if !o.admin {
		return json.Marshal(plain(o))
	}
	return json.Marshal(struct {
		plain
		InFlight *int64 `json:"in_flight"`
		Acquired *int   `json:"acquired"`
		Archived *int   `json:"archived"`
		Error    string `json:"error,omitempty"`
	}{plain(o), o.InFlight, o.Acquired, o.Archived, o.Error})
}

// describeShareGroupView describes a share group: its ShareGroupDescribe
// answer, its members, and each partition with share state or assigned
// to a member with its start offset (SPSO), log end offset, lag and how
// many members it is assigned to; with admin (the nodes' admin APIs),
// what each share-partition holds in flight.
func describeShareGroupView(ctx context.Context, adm *kadm.Client, d kadm.DescribedShareGroup, admin string, access chaos.Access) (*shareGroupView, error) {
	described, err := adm.DescribeShareGroupOffsets(ctx, d.GroupID)
	if err != nil && described == nil {
		return nil, err
	}
	o, ok := described[d.GroupID]
	switch {
	case !ok:
		return nil, errors.New("DescribeShareGroupOffsets: not in the broker's response")
	case o.Err != nil:
		return nil, fmt.Errorf("DescribeShareGroupOffsets: %w", o.Err)
	}
	offsets := o.Offsets
	// Members per partition; a partition assigned and without share state
	// yet (no member fetched it) has no start offset.
	assigned := map[string]map[int32]int{}
	for _, m := range d.Members {
		for t, ps := range m.Assignment {
			if assigned[t] == nil {
				assigned[t] = map[int32]int{}
			}
			for p := range ps {
				assigned[t][p]++
				if _, ok := offsets.Lookup(t, p); !ok {
					if offsets[t] == nil {
						offsets[t] = map[int32]kadm.ShareOffset{}
					}
					offsets[t][p] = kadm.ShareOffset{Topic: t, Partition: p, StartOffset: -1, LeaderEpoch: -1, Lag: -1}
				}
			}
		}
	}
	var ends kadm.ListedOffsets
	topics := make([]string, 0, len(offsets))
	for t := range offsets {
		topics = append(topics, t)
	}
	if len(topics) > 0 {
		// As kadm's Lag: a partition missing from a failed listing shows
		// "-" rather than failing the command.
		if ends, err = adm.ListEndOffsets(ctx, topics...); err != nil && ends == nil {
			return nil, err
		}
	}
	var held map[string]map[int32]sharePartition
	if admin != "" {
		if held, err = sharePartitions(ctx, admin, d.GroupID, access); err != nil {
			return nil, err
		}
	}

	v := &shareGroupView{
		groupHeader:     groupHeader{Group: d.GroupID, Type: "share", Coordinator: d.Coordinator.NodeID, State: d.GroupState},
		GroupEpoch:      d.GroupEpoch,
		AssignmentEpoch: d.AssignmentEpoch,
		Assignor:        d.Assignor,
		Members:         []shareMember{},
		Offsets:         []shareOffset{},
		admin:           admin != "",
	}
	for _, m := range d.Members {
		v.Members = append(v.Members, shareMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost,
			MemberEpoch: m.MemberEpoch, Assignment: topicsSetMap(m.Assignment)})
	}
	for _, p := range offsets.Sorted() {
		so := shareOffset{Topic: p.Topic, Partition: p.Partition, MembersAssigned: assigned[p.Topic][p.Partition], Error: errString(p.Err), admin: v.admin}
		if p.StartOffset >= 0 {
			so.StartOffset = &p.StartOffset
		}
		if e, ok := ends.Lookup(p.Topic, p.Partition); ok && e.Err == nil {
			so.EndOffset = &e.Offset
		}
		if p.Lag >= 0 {
			so.Lag = &p.Lag
		}
		if h, ok := held[p.Topic][p.Partition]; ok && h.Loaded {
			so.InFlight, so.Acquired, so.Archived = &h.InFlight, &h.Acquired, &h.Archived
		}
		v.Offsets = append(v.Offsets, so)
	}
	v.TotalLag, _ = v.totalLag()
	return v, nil
}

// totalLag sums the lag of the partitions that have one and no error, and
// prints it with each topic's share when there are several.
func (v *shareGroupView) totalLag() (int64, string) {
	byTopic := map[string]int64{}
	for _, o := range v.Offsets {
		if o.Error == "" && o.Lag != nil {
			byTopic[o.Topic] += *o.Lag
		}
	}
	return totalLagText(byTopic)
}

func (v *shareGroupView) text(w io.Writer) error {
	_, total := v.totalLag()
	header := [][2]string{
		{"GROUP", v.Group},
		{"COORDINATOR", strconv.Itoa(int(v.Coordinator))},
		{"STATE", v.State},
		{"PROTOCOL", "share/" + orDash(v.Assignor)},
		{"GROUP-EPOCH", strconv.Itoa(int(v.GroupEpoch))},
		{"ASSIGNMENT-EPOCH", strconv.Itoa(int(v.AssignmentEpoch))},
		{"MEMBERS", strconv.Itoa(len(v.Members))},
		{"TOTAL-LAG", total},
	}
	members := [][]string{{"MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"}}
	for _, m := range v.Members {
		members = append(members, []string{m.MemberID, m.ClientID, m.Host, strconv.Itoa(int(m.MemberEpoch)), partitionsText(m.Assignment, "")})
	}
	if err := printDescribed(w, header, members, nil); err != nil {
		return err
	}
	if len(v.Offsets) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := [][]string{{"TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBERS"}}
	if v.admin {
		rows[0] = append(rows[0], "IN-FLIGHT", "ACQUIRED", "ARCHIVED")
	}
	rows[0] = append(rows[0], "ERROR")
	for _, o := range v.Offsets {
		n := "-"
		if o.MembersAssigned > 0 {
			n = strconv.Itoa(o.MembersAssigned)
		}
		row := []string{o.Topic, strconv.Itoa(int(o.Partition)), offsetText(o.StartOffset), offsetText(o.EndOffset), offsetText(o.Lag), n}
		if v.admin {
			inFlight, acquired, archived := "-", "-", "-"
			if o.InFlight != nil {
				inFlight, acquired, archived = strconv.FormatInt(*o.InFlight, 10), strconv.Itoa(*o.Acquired), strconv.Itoa(*o.Archived)
			}
			row = append(row, inFlight, acquired, archived)
		}
		rows = append(rows, append(row, o.Error))
	}
	return printTable(w, dropEmptyLastColumn(rows))
}

// describeShareGroup returns group's ShareGroupDescribe answer, ok false
// when it is not a share group (or the broker has no share groups).
func describeShareGroup(ctx context.Context, adm *kadm.Client, group string) (kadm.DescribedShareGroup, bool) {
	described, err := adm.DescribeShareGroups(ctx, group)
	if err != nil {
		return kadm.DescribedShareGroup{}, false
	}
	d, ok := described[group]
	return d, ok && d.Err == nil
}

// notEmpty explains a share group's NON_EMPTY_GROUP, Kafka's answer to a
// change of the offsets of a group with members.
func notEmpty(err error, members int) error {
	if !errors.Is(err, kerr.NonEmptyGroup) {
		return err
	}
	if members > 0 {
		return fmt.Errorf("%w: the share group has %d member(s): only an empty share group's offsets can be changed, stop its consumers first", err, members)
	}
	return fmt.Errorf("%w: only an empty share group's offsets can be changed, stop its consumers first", err)
}

// seekShareGroup sets a share group's start offsets (AlterShareGroupOffsets)
// to where start resolves for every partition of topics, by default of
// those the group has share state for; cl is adm's client, whose answers
// keep the broker's error messages. members is how many members the
// group had when described, to explain a refusal.
//
// NB: unlike a consumer group's seek, nothing is checked before: the
// coordinator refuses the whole request with NON_EMPTY_GROUP while the
// group has members, and that answer is shown.
//
// Without opts.execute it changes nothing and prints the plan; a group
// with members is refused then too, as the broker would refuse it.
func seekShareGroup(ctx context.Context, flags *clientFlags, cl kmsg.Requestor, adm *kadm.Client, group string, members int, start startSpec, topics []string, w io.Writer, opts seekOptions) error {
	rctx, cancel := flags.requestContext(ctx)
	defer cancel()
	prior := kadm.ShareOffsets{}
	described, err := adm.DescribeShareGroupOffsets(rctx, group)
	if err != nil && described == nil {
		return err
	}
	if d, ok := described[group]; ok {
		switch {
		case d.Err == nil:
			prior = d.Offsets
		case !errors.Is(d.Err, kerr.GroupIDNotFound):
			// A group not found is made by AlterShareGroupOffsets.
			return d.Err
		}
	}
	if len(topics) == 0 {
		for t := range prior {
			topics = append(topics, t)
		}
		slices.Sort(topics)
		if len(topics) == 0 {
			return errors.New("the share group has no start offsets: name the topics to seek with --topics")
		}
	}
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		c := &consumer{flags: flags, topic: t}
		to, _, err := c.startOffsets(ctx, adm, start, -1)
		if err != nil {
			return fmt.Errorf("topic %s: %w", t, err)
		}
		rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		rt.Topic = t
		for _, p := range slices.Sorted(maps.Keys(to)) {
			rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
			rp.Partition, rp.StartOffset = p, to[p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	plan := seekPlan{Group: group, Type: "share", Executed: opts.execute}
	current := func(t string, p int32) int64 {
		if o, ok := prior.Lookup(t, p); ok && o.Err == nil && o.StartOffset >= 0 {
			return o.StartOffset
		}
		return -1
	}
	if !opts.execute {
		if members > 0 {
			return notEmpty(kerr.NonEmptyGroup, members)
		}
		for _, rt := range req.Topics {
			for _, rp := range rt.Partitions {
				plan.Partitions = append(plan.Partitions, seekPartition{Topic: rt.Topic, Partition: rp.Partition, CurrentOffset: current(rt.Topic, rp.Partition), NewOffset: rp.StartOffset})
			}
		}
		return plan.write(w, opts.out)
	}
	rctx, cancel = flags.requestContext(ctx)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return notEmpty(kafkaError(err, derefString(resp.ErrorMessage)), members)
	}
	var errs []error
	for _, rt := range resp.Topics {
		asked := map[int32]int64{}
		for _, t := range req.Topics {
			if t.Topic == rt.Topic {
				for _, p := range t.Partitions {
					asked[p.Partition] = p.StartOffset
				}
			}
		}
		for _, rp := range rt.Partitions {
			after := int64(-1)
			if o, ok := asked[rp.Partition]; ok {
				after = o
			}
			perr := kafkaError(kerr.ErrorForCode(rp.ErrorCode), derefString(rp.ErrorMessage))
			plan.Partitions = append(plan.Partitions, seekPartition{Topic: rt.Topic, Partition: rp.Partition, CurrentOffset: current(rt.Topic, rp.Partition), NewOffset: after, Error: errString(perr)})
			if perr != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %w", rt.Topic, rp.Partition, perr))
			}
		}
	}
	if err := plan.write(w, opts.out); err != nil {
		return err
	}
	return errors.Join(errs...)
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// deleteShareOffsets deletes a share group's start offsets and in-flight
// state of topics (DeleteShareGroupOffsets): its consumers start those
// partitions afresh, from share.auto.offset.reset.
func deleteShareOffsets(ctx context.Context, cl kmsg.Requestor, group string, members int, topics []string, w io.Writer) error {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return notEmpty(kafkaError(err, derefString(resp.ErrorMessage)), members)
	}
	var errs []error
	for _, t := range topics {
		i := slices.IndexFunc(resp.Topics, func(rt kmsg.DeleteShareGroupOffsetsResponseTopic) bool { return rt.Topic == t })
		if i < 0 {
			errs = append(errs, fmt.Errorf("topic %s: not in the broker's response", t))
			continue
		}
		rt := resp.Topics[i]
		if err := kafkaError(kerr.ErrorForCode(rt.ErrorCode), derefString(rt.ErrorMessage)); err != nil {
			errs = append(errs, fmt.Errorf("topic %s: %w", t, err))
			continue
		}
		fmt.Fprintf(w, "deleted the offsets of %s on %s\n", group, t)
	}
	return errors.Join(errs...)
}
