package transport

// ListConfigResources: v0-1
//
// Behaviour, from the newest image:
//   - With an authorizer: DESCRIBE_CONFIGS on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - v1 lists the resources that have configs, of the types asked for
//     (none asked: every type Skein has), grouped by type as Kafka 4.2
//     groups them, newest type id first, names sorted within a type:
//     groups with configs (kafka-configs --entity-type groups --describe
//     lists these; a group without configs is not listed, as in Kafka),
//     the live brokers, every topic (internal ones too).
//   - Client-metrics resources (KIP-714): Skein has none, so asking for
//     them lists nothing, as Kafka answers when none is configured; v0
//     (ListClientMetricsResources) asks for nothing else.
//   - Broker loggers (type 8), which Skein does not have, are left out; a
//     type that has no configs at all (unknown, or ANY) is
//     UNSUPPORTED_VERSION for the whole request, as Kafka answers.
//
// Version notes: v0 was ListClientMetricsResources (KIP-714); v1 (KIP-1142)
// adds the resource types.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(74, handler{min: 0, max: 1, handle: a.handleListConfigResources})
	})
}

// The config resource types ListConfigResources knows, as its requests
// carry them.
var (
	resourceTopic         = int8(kmsg.ConfigResourceTypeTopic)
	resourceBroker        = int8(kmsg.ConfigResourceTypeBroker)
	resourceBrokerLogger  = int8(kmsg.ConfigResourceTypeBrokerLogger)
	resourceClientMetrics = int8(kmsg.ConfigResourceTypeClientMetrics)
	resourceGroup         = int8(kmsg.ConfigResourceTypeGroupConfig)
)

// resourceTypes are those types in the order Kafka answers them: type by
// type, the highest id first.
var resourceTypes = []int8{resourceGroup, resourceClientMetrics, resourceBrokerLogger, resourceBroker, resourceTopic}

func (a *API) handleListConfigResources(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if z := c.authz(); !z.may(describeConfigs, clusterResource, clusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	asked := req.ResourceTypes
	switch {
	case req.Version == 0:
		asked = []int8{resourceClientMetrics}
	case len(asked) == 0:
		asked = resourceTypes
	}
	for _, t := range asked {
		if !slices.Contains(resourceTypes, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return respond(resp)
		}
	}
	im := a.Image()
	add := func(typ int8, names ...string) {
		for _, n := range names {
			r := kmsg.NewListConfigResourcesResponseConfigResource()
			r.Name, r.Type = n, typ
			resp.ConfigResources = append(resp.ConfigResources, r)
		}
	}
	for _, t := range resourceTypes {
		if !slices.Contains(asked, t) {
			continue
		}
		switch t {
		case resourceGroup:
			add(t, slices.Sorted(maps.Keys(im.GroupConfigs))...)
		case resourceBroker:
			for _, id := range im.LiveBrokerIDs() {
				add(t, strconv.Itoa(int(id)))
			}
		case resourceTopic:
			add(t, im.TopicNames()...)
		}
	}
	return respond(resp)
}
