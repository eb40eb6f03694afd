package tests

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
)

// TestShareGroupMembership: KIP-932's share group membership over the
// wire, as a share consumer speaks it: two members join with
// ShareGroupHeartbeat (client-generated member ids, epoch 0), the group
// epoch moves with each, the simple assignor spreads a topic's partitions
// over them, ShareGroupDescribe and ListGroups (type filter "share") show
// the group, a leave empties it, and the share.* group configs are set
// and described on the GROUP resource as franz-go's share tests set them.
func TestShareGroupMembership(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) { c.OffsetsTopicNumPartitions = 3 })
	const topic, group = "share-members", "sg"
	if _, err := b.admin().CreateTopic(ctxFor(t), 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	raw := b.client()
	heartbeat := func(member string, epoch int32, subs ...string) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch, req.SubscribedTopicNames = group, member, epoch, subs
		resp := rawReq[*kmsg.ShareGroupHeartbeatResponse](t, raw, req)
		// The coordinator's partition may still be opening: retry as
		// clients do.
		for deadline := time.Now().Add(time.Minute); resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			resp = rawReq[*kmsg.ShareGroupHeartbeatResponse](t, raw, req)
		}
		return resp
	}
	partitions := func(r *kmsg.ShareGroupHeartbeatResponse) []int32 {
		var out []int32
		if r.Assignment != nil {
			for _, tp := range r.Assignment.TopicPartitions {
				out = append(out, tp.Partitions...)
			}
		}
		slices.Sort(out)
		return out
	}

	a := heartbeat("11111111-1111-1111-1111-111111111111", 0, topic)
	wantErr(t, "a joins", a.ErrorCode, nil)
	if a.MemberEpoch != 1 || len(partitions(a)) != 4 || a.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("a joins: epoch %d partitions %v interval %d", a.MemberEpoch, partitions(a), a.HeartbeatIntervalMillis)
	}
	bm := heartbeat("22222222-2222-2222-2222-222222222222", 0, topic)
	wantErr(t, "b joins", bm.ErrorCode, nil)
	if bm.MemberEpoch != 2 || len(partitions(bm)) != 2 {
		t.Fatalf("b joins: epoch %d partitions %v, want epoch 2 and half", bm.MemberEpoch, partitions(bm))
	}
	a = heartbeat("11111111-1111-1111-1111-111111111111", 1)
	if a.MemberEpoch != 2 || len(partitions(a)) != 2 || slices.ContainsFunc(partitions(a), func(p int32) bool { return slices.Contains(partitions(bm), p) }) {
		t.Fatalf("a after b: epoch %d partitions %v (b has %v)", a.MemberEpoch, partitions(a), partitions(bm))
	}
	wantErr(t, "an unknown member", heartbeat("33333333-3333-3333-3333-333333333333", 5).ErrorCode, kerr.UnknownMemberID)

	// ShareGroupDescribe.
	d := kmsg.NewPtrShareGroupDescribeRequest()
	d.GroupIDs = []string{group, "no-such-group"}
	dr := rawReq[*kmsg.ShareGroupDescribeResponse](t, raw, d)
	if len(dr.Groups) != 2 {
		t.Fatalf("describe: %+v", dr.Groups)
	}
	g := dr.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.GroupEpoch != 2 || g.AssignmentEpoch != 2 || g.Assignor != "simple" || len(g.Members) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	total := 0
	for _, m := range g.Members {
		if m.MemberEpoch != 2 || len(m.Assignment.TopicPartitions) != 1 || m.Assignment.TopicPartitions[0].Topic != topic {
			t.Errorf("member %+v", m)
			continue
		}
		total += len(m.Assignment.TopicPartitions[0].Partitions)
	}
	if total != 4 {
		t.Errorf("the members hold %d partitions, want the topic's 4", total)
	}
	wantErr(t, "describe an unknown group", dr.Groups[1].ErrorCode, kerr.GroupIDNotFound)

	// ListGroups, by type.
	list := func(types ...string) []kmsg.ListGroupsResponseGroup {
		req := kmsg.NewPtrListGroupsRequest()
		req.TypesFilter = types
		return rawReq[*kmsg.ListGroupsResponse](t, raw, req).Groups
	}
	if l := list("share"); len(l) != 1 || l[0].Group != group || l[0].GroupType != "share" || l[0].GroupState != "Stable" {
		t.Errorf("ListGroups share: %+v", l)
	}
	if l := list("consumer", "classic"); len(l) != 0 {
		t.Errorf("ListGroups consumer, classic: %+v", l)
	}
	// The other protocols' requests to a share group.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = group, "c", 10000, []string{topic}
	wantErr(t, "ConsumerGroupHeartbeat to a share group", rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, cg).ErrorCode, kerr.GroupIDNotFound)

	// Leaving empties the group; DeleteGroups then deletes it.
	for _, m := range []string{"11111111-1111-1111-1111-111111111111", "22222222-2222-2222-2222-222222222222"} {
		r := heartbeat(m, -1)
		if r.ErrorCode != 0 || r.MemberEpoch != -1 {
			t.Errorf("%s leaves: %+v", m, r)
		}
	}
	if l := list("share"); len(l) != 1 || l[0].GroupState != "Empty" {
		t.Errorf("ListGroups after the leaves: %+v", l)
	}
	dels, err := b.admin().DeleteGroups(ctxFor(t), group)
	if err != nil || dels[group].Err != nil {
		t.Fatalf("DeleteGroups: %v %v", err, dels)
	}
	if l := list("share"); len(l) != 0 {
		t.Errorf("ListGroups after the delete: %+v", l)
	}

	// share.* group configs, as TestShareGroupETL sets them.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"} {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = k, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(v)
		r.Configs = append(r.Configs, c)
	}
	alter.Resources = append(alter.Resources, r)
	ar := rawReq[*kmsg.IncrementalAlterConfigsResponse](t, raw, alter).Resources[0]
	wantErr(t, "set share.* group configs", ar.ErrorCode, nil)
	desc := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	desc.Resources = append(desc.Resources, dres)
	want := map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000",
		"share.isolation.level": "read_uncommitted", "share.session.timeout.ms": "45000"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]string{}
		for _, c := range rawReq[*kmsg.DescribeConfigsResponse](t, raw, desc).Resources[0].Configs {
			got[c.Name] = deref(c.Value)
		}
		ok := true
		for k, v := range want {
			ok = ok && got[k] == v
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("described %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	bad := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.Configs = r.Configs[:1]
	r.Configs[0].Name, r.Configs[0].Value = "share.isolation.level", kmsg.StringPtr("sometimes")
	bad.Resources = []kmsg.IncrementalAlterConfigsRequestResource{r}
	wantErr(t, "share.isolation.level sometimes", rawReq[*kmsg.IncrementalAlterConfigsResponse](t, raw, bad).Resources[0].ErrorCode, kerr.InvalidConfig)
}
