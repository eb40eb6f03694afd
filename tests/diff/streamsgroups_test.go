//go:build kafkadiff

package diff

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The streams group cases (KIP-1071) walk streams groups through their
// states on both brokers, as a Kafka Streams client speaks the protocol:
// StreamsGroupHeartbeat joins with a small topology (the brokers create
// its changelog topic and say so with MISSING_INTERNAL_TOPICS until it
// exists), a topology whose source topic is missing, invalid topologies
// and malformed requests; StreamsGroupDescribe, ListGroups by type and
// DeleteGroups of a streams group with and without members. Member ids
// are the client's, the same on both brokers.

const (
	streamsMemberA = "9a3c7f7e-5b1f-4e4f-9a37-000000000001"
	streamsMemberB = "9a3c7f7e-5b1f-4e4f-9a37-000000000002"
	streamsMemberX = "9a3c7f7e-5b1f-4e4f-9a37-000000000009" // never joins
)

// streamsTopology is a topology of one subtopology reading source, with
// a changelog topic named after the group; repartition adds a second
// subtopology writing to and reading from a repartition topic.
func streamsTopology(group, source string, repartition bool) *kmsg.StreamsGroupHeartbeatRequestTopology {
	tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	tp.Epoch = 1
	s0 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	s0.SubtopologyID, s0.SourceTopics = "0", []string{source}
	tp.Subtopologies = append(tp.Subtopologies, s0)
	last := &tp.Subtopologies[0]
	if repartition {
		rp := group + "-repartition"
		last.RepartitionSinkTopics = []string{rp}
		s1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		s1.SubtopologyID = "1"
		ri := kmsg.NewTopicInfo()
		ri.Topic = rp
		s1.RepartitionSourceTopics = []kmsg.TopicInfo{ri}
		tp.Subtopologies = append(tp.Subtopologies, s1)
		last = &tp.Subtopologies[1]
	}
	cl := kmsg.NewTopicInfo()
	cl.Topic = group + "-store-changelog"
	last.StateChangelogTopics = []kmsg.TopicInfo{cl}
	return &tp
}

// streamsHeartbeat is a StreamsGroupHeartbeat of member at epoch; at
// epoch 0 (a join) it carries topology, otherwise it says the member owns
// active (nil: says nothing of its tasks).
func streamsHeartbeat(group, member string, epoch int32, topology *kmsg.StreamsGroupHeartbeatRequestTopology, active []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = kmsg.StringPtr("process-" + member[len(member)-1:])
		req.Topology = topology
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else if active != nil {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = active, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	return req
}

func streamsDescribe(groups ...string) *kmsg.StreamsGroupDescribeRequest {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = groups
	return req
}

func listGroupsOfType(types ...string) *kmsg.ListGroupsRequest {
	req := kmsg.NewPtrListGroupsRequest()
	req.TypesFilter = types
	return req
}

// streamsSettled heartbeats member on each broker, from the epoch each
// gave it and with the tasks each gave it, until the broker answers with
// no status (the internal topics exist) and the group is Stable; it
// returns the member's epoch and active tasks on each broker.
func streamsSettled(t *testing.T, group, member string, epochs [2]int32) ([2]int32, [2][]kmsg.TaskIDs) {
	t.Helper()
	var tasks [2][]kmsg.TaskIDs
	for i, addr := range []string{kafkaAddr, skeinAddr} {
		tasks[i] = []kmsg.TaskIDs{}
		waitFor(t, addr+" to settle "+member+" of "+group, func() bool {
			o := send(addr, streamsHeartbeat(group, member, epochs[i], nil, tasks[i]))
			if o.err != nil {
				return false
			}
			r := o.resp.(*kmsg.StreamsGroupHeartbeatResponse)
			if r.ErrorCode != 0 {
				t.Fatalf("%s: heartbeat of %s: %v %v", addr, member, kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
			}
			epochs[i] = r.MemberEpoch
			if r.ActiveTasks != nil {
				tasks[i] = r.ActiveTasks
			}
			if len(r.Status) > 0 {
				return false
			}
			d := send(addr, streamsDescribe(group))
			return d.err == nil && d.resp.(*kmsg.StreamsGroupDescribeResponse).Groups[0].State == "Stable"
		})
	}
	return epochs, tasks
}

// TestStreamsGroup walks a streams group through its states: describe
// before it exists, a join with a topology whose changelog topic does not
// exist yet (MISSING_INTERNAL_TOPICS, the broker creates it), the member
// settled with its tasks, describe, list by type, heartbeats at wrong
// epochs and of unknown members, DeleteGroups while it has a member, the
// member leaving, describe of the empty group, DeleteGroups, and describe
// of the deleted group.
func TestStreamsGroup(t *testing.T) {
	c := newCase(t)
	const topic, group = "diff-streams-in", "diff-streams"
	createTopic(c, newTopic(topic, 2, 1))
	waitCoordinator(t, group)
	topology := streamsTopology(group, topic, false)

	c.compare(streamsDescribe(group)) // no such group
	k, s := c.compare(streamsHeartbeat(group, streamsMemberA, 0, topology, nil))
	if k == nil || s == nil || k.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 || s.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("the join: kafka %+v, skein %+v", k, s)
	}
	epochs, tasks := streamsSettled(t, group, streamsMemberA, [2]int32{k.(*kmsg.StreamsGroupHeartbeatResponse).MemberEpoch, s.(*kmsg.StreamsGroupHeartbeatResponse).MemberEpoch})
	c.compare(streamsDescribe(group))
	c.compare(listGroupsOfType("streams"))
	each := func(delta int32) func(bool) kmsg.Request {
		return func(kafka bool) kmsg.Request {
			i := 1
			if kafka {
				i = 0
			}
			return streamsHeartbeat(group, streamsMemberA, epochs[i]+delta, nil, tasks[i])
		}
	}
	t.Run("heartbeat", func(t *testing.T) { newCase(t).compareEach(-1, each(0)) })
	t.Run("epoch ahead", func(t *testing.T) { newCase(t).compareEach(-1, each(5)) })
	t.Run("epoch behind", func(t *testing.T) { newCase(t).compareEach(-1, each(-1)) })
	t.Run("unknown member", func(t *testing.T) {
		newCase(t).compare(streamsHeartbeat(group, streamsMemberX, 1, nil, nil))
	})
	t.Run("unknown member leaving", func(t *testing.T) {
		newCase(t).compare(streamsHeartbeat(group, streamsMemberX, -1, nil, nil))
	})
	t.Run("a second member with another topology", func(t *testing.T) {
		newCase(t).compare(streamsHeartbeat(group, streamsMemberB, 0, streamsTopology(group, topic, true), nil))
	})
	t.Run("delete with a member", func(t *testing.T) { newCase(t).compare(deleteGroups(group)) })
	c.compare(streamsHeartbeat(group, streamsMemberA, -1, nil, nil))
	c.compare(streamsDescribe(group)) // Empty
	c.compare(listGroupsOfType("streams"))
	c.compare(deleteGroups(group))
	c.compare(streamsDescribe(group)) // gone
}

// TestStreamsGroupTopologies compares what the brokers say of topologies
// they cannot run: a source topic that does not exist
// (MISSING_SOURCE_TOPICS, the member joins and waits), a changelog topic
// with a partition count, a repartition topic read but never written
// (STREAMS_INVALID_TOPOLOGY), and a copartition group of source topics
// with different partition counts (INCORRECTLY_PARTITIONED_TOPICS).
func TestStreamsGroupTopologies(t *testing.T) {
	c := newCase(t)
	const two, three = "diff-streams-topo-2", "diff-streams-topo-3"
	createTopic(c, newTopic(two, 2, 1))
	createTopic(c, newTopic(three, 3, 1))
	join := func(name, group string, topology *kmsg.StreamsGroupHeartbeatRequestTopology) {
		t.Run(name, func(t *testing.T) {
			waitCoordinator(t, group)
			c := newCase(t)
			c.compare(streamsHeartbeat(group, streamsMemberA, 0, topology, nil))
			c.compare(streamsDescribe(group))
		})
	}
	join("missing source topic", "diff-streams-missing", streamsTopology("diff-streams-missing", "diff-streams-never", false))

	changelog := streamsTopology("diff-streams-changelog", two, false)
	changelog.Subtopologies[0].StateChangelogTopics[0].NumPartitions = 4
	join("changelog with a partition count", "diff-streams-changelog", changelog)

	unwritten := streamsTopology("diff-streams-unwritten", two, true)
	unwritten.Subtopologies[0].RepartitionSinkTopics = nil
	join("repartition topic no one writes", "diff-streams-unwritten", unwritten)

	copart := streamsTopology("diff-streams-copart", two, false)
	copart.Subtopologies[0].SourceTopics = []string{two, three}
	cg := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup()
	cg.SourceTopics = []int16{0, 1}
	copart.Subtopologies[0].CopartitionGroups = append(copart.Subtopologies[0].CopartitionGroups, cg)
	join("copartitioned sources of different sizes", "diff-streams-copart", copart)
}

// TestStreamsGroupRequests compares the answers to malformed
// StreamsGroupHeartbeats, which both brokers refuse before looking at the
// group, the other group types' APIs on a streams group and the streams
// APIs on a consumer group, and a classic join of an empty streams group,
// which becomes a classic group.
func TestStreamsGroupRequests(t *testing.T) {
	c := newCase(t)
	const topic, group = "diff-streams-requests", "diff-streams-requests"
	createTopic(c, newTopic(topic, 1, 1))
	waitCoordinator(t, group)
	topology := streamsTopology(group, topic, false)
	for _, r := range []struct {
		name string
		edit func(*kmsg.StreamsGroupHeartbeatRequest)
	}{
		{"empty member id", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }},
		{"empty group id", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Group = "" }},
		{"static member", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.InstanceID = kmsg.StringPtr("i") }},
		{"no rebalance timeout", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }},
		{"no topology", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }},
		{"owned tasks at join", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			ti := kmsg.NewTaskIDs()
			ti.SubtopologyID, ti.Partitions = "0", []int32{0}
			r.ActiveTasks = []kmsg.TaskIDs{ti}
		}},
		{"epoch -2", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch, r.Topology = -2, nil }},
		{"epoch -3", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberEpoch, r.Topology = -3, nil }},
		{"empty rack", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RackID = kmsg.StringPtr("") }},
		{"unknown group, epoch 1", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Group, r.MemberEpoch, r.Topology = "diff-streams-never", 1, nil
		}},
	} {
		t.Run(r.name, func(t *testing.T) {
			req := streamsHeartbeat(group, streamsMemberA, 0, topology, nil)
			r.edit(req)
			newCase(t).compare(req)
		})
	}

	// Other types' APIs on a streams group, streams APIs on a consumer
	// group.
	const consumer = "diff-streams-requests-consumer"
	waitCoordinator(t, consumer)
	consumerJoin(c, consumer, topic)
	k, s := c.compare(streamsHeartbeat(group, streamsMemberA, 0, topology, nil))
	if k == nil || s == nil {
		t.Fatal("the join")
	}
	for _, r := range []struct {
		name string
		req  kmsg.Request
	}{
		{"streams heartbeat of a consumer group", streamsHeartbeat(consumer, streamsMemberA, 0, topology, nil)},
		{"streams describe of a consumer group and a streams group", streamsDescribe(consumer, group)},
		{"consumer describe of a streams group", func() kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			return req
		}()},
		{"classic join of a streams group", joinGroup(group, "", topic)},
		{"describe groups of a streams group", describeGroups(group)},
		{"share heartbeat of a streams group", shareHeartbeat(group, shareMemberA, 0, topic)},
		{"list groups of types streams and consumer", listGroupsOfType("streams", "consumer")},
	} {
		t.Run(r.name, func(t *testing.T) { newCase(t).compare(r.req) })
	}
	c.compare(streamsHeartbeat(group, streamsMemberA, -1, nil, nil))

	// A classic join of the empty streams group makes it a classic group
	// (Kafka's maybeDeleteEmptyStreamsGroup): the streams APIs no longer
	// know it.
	ko, so := c.exchange(joinGroup(group, "", topic), -1)
	kid, sid := memberIDs(t, ko.resp, so.resp)
	c.name(kid, sid, "member-A")
	c.check("JoinGroup of an empty streams group", ko, so)
	c.compare(streamsDescribe(group))
	c.compare(listGroupsOfType("streams"))
}
