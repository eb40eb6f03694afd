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

// printShareGroup prints a share group: its ShareGroupDescribe answer, its
// members, and each partition with share state or assigned to a member
// with its start offset (SPSO), log end offset, lag and how many members
// it is assigned to; with admin (the nodes' admin APIs), what each
// share-partition holds in flight.
func printShareGroup(ctx context.Context, adm *kadm.Client, w io.Writer, d kadm.DescribedShareGroup, admin string, access chaos.Access) error {
	described, err := adm.DescribeShareGroupOffsets(ctx, d.GroupID)
	if err != nil && described == nil {
		return err
	}
	o, ok := described[d.GroupID]
	switch {
	case !ok:
		return errors.New("DescribeShareGroupOffsets: not in the broker's response")
	case o.Err != nil:
		return fmt.Errorf("DescribeShareGroupOffsets: %w", o.Err)
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
			return err
		}
	}
	var held map[string]map[int32]sharePartition
	if admin != "" {
		if held, err = sharePartitions(ctx, admin, d.GroupID, access); err != nil {
			return err
		}
	}

	sorted := offsets.Sorted()
	var total int64
	byTopic := map[string]int64{}
	for _, p := range sorted {
		if p.Err == nil && p.Lag >= 0 {
			total += p.Lag
			byTopic[p.Topic] += p.Lag
		}
	}
	totalLag := strconv.FormatInt(total, 10)
	if len(byTopic) > 1 {
		var parts []string
		for _, t := range slices.Sorted(maps.Keys(byTopic)) {
			parts = append(parts, fmt.Sprintf("%s %d", t, byTopic[t]))
		}
		totalLag += " (" + strings.Join(parts, ", ") + ")"
	}
	header := [][2]string{
		{"GROUP", d.GroupID},
		{"COORDINATOR", strconv.Itoa(int(d.Coordinator.NodeID))},
		{"STATE", d.GroupState},
		{"PROTOCOL", "share/" + orDash(d.Assignor)},
		{"GROUP-EPOCH", strconv.Itoa(int(d.GroupEpoch))},
		{"ASSIGNMENT-EPOCH", strconv.Itoa(int(d.AssignmentEpoch))},
		{"MEMBERS", strconv.Itoa(len(d.Members))},
		{"TOTAL-LAG", totalLag},
	}
	members := [][]string{{"MEMBER-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT"}}
	for _, m := range d.Members {
		members = append(members, []string{m.MemberID, m.ClientID, m.ClientHost, strconv.Itoa(int(m.MemberEpoch)), topicsSet(m.Assignment)})
	}
	if err := printDescribed(w, header, members, nil); err != nil {
		return err
	}
	if len(sorted) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	rows := [][]string{{"TOPIC", "PARTITION", "START-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBERS"}}
	if admin != "" {
		rows[0] = append(rows[0], "IN-FLIGHT", "ACQUIRED", "ARCHIVED")
	}
	rows[0] = append(rows[0], "ERROR")
	for _, p := range sorted {
		start, end, lag, n := "-", "-", "-", "-"
		if p.StartOffset >= 0 {
			start = strconv.FormatInt(p.StartOffset, 10)
		}
		if e, ok := ends.Lookup(p.Topic, p.Partition); ok && e.Err == nil {
			end = strconv.FormatInt(e.Offset, 10)
		}
		if p.Lag >= 0 {
			lag = strconv.FormatInt(p.Lag, 10)
		}
		if c := assigned[p.Topic][p.Partition]; c > 0 {
			n = strconv.Itoa(c)
		}
		row := []string{p.Topic, strconv.Itoa(int(p.Partition)), start, end, lag, n}
		if admin != "" {
			inFlight, acquired, archived := "-", "-", "-"
			if h, ok := held[p.Topic][p.Partition]; ok && h.Loaded {
				inFlight, acquired, archived = strconv.FormatInt(h.InFlight, 10), strconv.Itoa(h.Acquired), strconv.Itoa(h.Archived)
			}
			row = append(row, inFlight, acquired, archived)
		}
		rows = append(rows, append(row, errString(p.Err)))
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
