package tests

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigs: KIP-848 group configs, as kafka-configs --entity-type
// groups sets them. A group's consumer.heartbeat.interval.ms reaches its
// members at their next heartbeat while another group keeps the node's;
// DescribeConfigs tells the group's own value from the node's default;
// values outside the node's bounds, unknown names and the empty group name
// are refused as Kafka refuses them; ListConfigResources lists the group;
// the configs survive a restart and a deleted one gives the node's value
// back.
func TestGroupConfigs(t *testing.T) {
	b := consumerGroupBroker(t) // heartbeat 200 ms (at least 100), session 2 s (at least 1 s)
	const topic = "group-configs"
	if _, err := b.admin().CreateTopic(ctxFor(t), 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	var raw *kgo.Client
	alter := func(group string, op kmsg.IncrementalAlterConfigOp, key, value string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = key, op, kmsg.StringPtr(value)
		r.Configs = append(r.Configs, c)
		req.Resources = append(req.Resources, r)
		resp := rawReq[*kmsg.IncrementalAlterConfigsResponse](t, raw, req).Resources[0]
		return resp.ErrorCode, deref(resp.ErrorMessage)
	}
	// interval joins a member to group (member epoch 0) and returns the
	// heartbeat interval the coordinator gives it.
	interval := func(group string) int32 {
		hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		hb.Group, hb.MemberID, hb.MemberEpoch = group, "member-of-"+group, 0
		hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = 10000, []string{topic}
		hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		// A coordinator whose offsets partition is still opening (after a
		// restart) answers COORDINATOR_LOAD_IN_PROGRESS, which clients
		// retry: so does this.
		resp := rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb)
		for deadline := time.Now().Add(time.Minute); resp.ErrorCode == kerr.CoordinatorLoadInProgress.Code && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			resp = rawReq[*kmsg.ConsumerGroupHeartbeatResponse](t, raw, hb)
		}
		wantErr(t, "heartbeat to "+group, resp.ErrorCode, nil)
		return resp.HeartbeatIntervalMillis
	}
	describe := func(group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		req.Resources, req.IncludeSynonyms, req.IncludeDocumentation = append(req.Resources, r), true, true
		resp := rawReq[*kmsg.DescribeConfigsResponse](t, raw, req).Resources[0]
		wantErr(t, "DescribeConfigs of "+group, resp.ErrorCode, nil)
		out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range resp.Configs {
			out[c.Name] = c
		}
		return out
	}
	raw = b.client()

	if code, msg := alter("tuned", kmsg.IncrementalAlterConfigOpSet, "consumer.heartbeat.interval.ms", "300"); code != 0 {
		t.Fatalf("set consumer.heartbeat.interval.ms 300: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := interval("tuned"); got != 300 {
		t.Errorf("heartbeat interval of the tuned group: %d ms, want its own 300", got)
	}
	if got := interval("plain"); got != 200 {
		t.Errorf("heartbeat interval of another group: %d ms, want the node's 200", got)
	}
	cfgs := describe("tuned")
	hb, session := cfgs["consumer.heartbeat.interval.ms"], cfgs["consumer.session.timeout.ms"]
	if deref(hb.Value) != "300" || hb.Source != kmsg.ConfigSourceGroupConfig || hb.ReadOnly ||
		hb.ConfigType != kmsg.ConfigTypeInt || deref(hb.Documentation) == "" {
		t.Errorf("consumer.heartbeat.interval.ms described as %+v", hb)
	}
	if deref(session.Value) != "2000" || session.Source != kmsg.ConfigSourceDefaultConfig ||
		len(session.ConfigSynonyms) != 1 || session.ConfigSynonyms[0].Name != "consumer.session.timeout.ms" {
		t.Errorf("consumer.session.timeout.ms described as %+v", session)
	}

	for _, c := range []struct {
		group, key, value string
		want              error
		msg               string
	}{
		{"tuned", "consumer.heartbeat.interval.ms", "50", kerr.InvalidConfig, "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"tuned", "consumer.session.timeout.ms", "60001", kerr.InvalidConfig, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"tuned", "consumer.session.timeout.ms", "soon", kerr.InvalidConfig, "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{"tuned", "streams.session.timeout.ms", "44999", kerr.InvalidConfig, "streams.session.timeout.ms must be greater than or equal to group.streams.min.session.timeout.ms"},
		{"tuned", "streams.num.standby.replicas", "3", kerr.InvalidConfig, "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
		{"tuned", "streams.unknown", "1", kerr.InvalidConfig, "Unknown group config name: streams.unknown"},
		{"tuned", "share.session.timeout.ms", "44999", kerr.InvalidConfig, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{"", "consumer.session.timeout.ms", "50000", kerr.InvalidRequest, "Default group resources are not allowed."},
	} {
		code, msg := alter(c.group, kmsg.IncrementalAlterConfigOpSet, c.key, c.value)
		if kerr.ErrorForCode(code) != c.want || msg != c.msg {
			t.Errorf("group %q %s=%s: %v %q, want %v %q", c.group, c.key, c.value, kerr.ErrorForCode(code), msg, c.want, c.msg)
		}
	}

	// ListConfigResources (KIP-1142), as kafka-configs --entity-type groups
	// --describe lists the groups to describe: the group with configs, not
	// the one without; every type: the broker and the topic too.
	listed := func(types ...int8) (int16, []string) {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp := rawReq[*kmsg.ListConfigResourcesResponse](t, raw, req)
		var out []string
		for _, r := range resp.ConfigResources {
			out = append(out, fmt.Sprintf("%d:%s", r.Type, r.Name))
		}
		return resp.ErrorCode, out
	}
	if code, got := listed(int8(kmsg.ConfigResourceTypeGroupConfig)); code != 0 || !slices.Equal(got, []string{"32:tuned"}) {
		t.Errorf("ListConfigResources of groups: %v %v, want [32:tuned]", kerr.ErrorForCode(code), got)
	}
	if code, got := listed(); code != 0 || !slices.Equal(got, []string{"32:tuned", "4:1", "2:__consumer_offsets", "2:" + topic}) {
		t.Errorf("ListConfigResources of every type: %v %v", kerr.ErrorForCode(code), got)
	}
	if code, _ := listed(1); kerr.ErrorForCode(code) != kerr.UnsupportedVersion {
		t.Errorf("ListConfigResources of type 1: %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(code))
	}

	b.restart()
	raw = b.client()
	if got := interval("tuned"); got != 300 {
		t.Errorf("after a restart, heartbeat interval of the tuned group: %d ms, want 300", got)
	}
	if code, msg := alter("tuned", kmsg.IncrementalAlterConfigOpDelete, "consumer.heartbeat.interval.ms", ""); code != 0 {
		t.Fatalf("delete consumer.heartbeat.interval.ms: %v %s", kerr.ErrorForCode(code), msg)
	}
	if got := interval("tuned"); got != 200 {
		t.Errorf("with its config deleted, heartbeat interval of the tuned group: %d ms, want the node's 200", got)
	}
	if _, got := listed(int8(kmsg.ConfigResourceTypeGroupConfig)); len(got) != 0 {
		t.Errorf("ListConfigResources of groups once the last config is deleted: %v", got)
	}
}

// deref returns *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
