package transport

// DescribeConfigs: v1-4
//
// Behaviour, from the newest image without messages:
//   - With an authorizer: DESCRIBE_CONFIGS on the topic
//     (TOPIC_AUTHORIZATION_FAILED), the group (GROUP_AUTHORIZATION_FAILED)
//     or, for a broker, broker logger or client-metrics resource, the
//     cluster (CLUSTER_AUTHORIZATION_FAILED), with what would allow it.
//   - Topic resources: every topic config, or those ConfigNames lists, with
//     its value in force and where it comes from: TOPIC_CONFIG (the topic's
//     own), DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG (set
//     with AlterConfigs on this broker or on every broker),
//     STATIC_BROKER_CONFIG (the node's configuration) or DEFAULT_CONFIG;
//     with IncludeSynonyms, every place that has a value, highest
//     precedence first (configs.DescribeTopic over the node's
//     configuration with the image's dynamic broker configs). Unknown
//     topic: UNKNOWN_TOPIC_OR_PARTITION; illegal name:
//     INVALID_TOPIC_EXCEPTION.
//   - Broker resources: named by this node's id, every setting of the node
//     with its value and source (configs.DescribeBroker), read-only unless
//     it is a dynamic broker config (the broker names of the topic
//     configs). Named "", only the cluster-wide dynamic configs, as Kafka.
//     Another broker's id, or a name that is not a number: INVALID_REQUEST,
//     as Kafka answers (that broker is the one to ask).
//   - Group resources (KIP-848 group configs): any group id, whether it
//     has a group or not, every group config (configs.DescribeGroup) with
//     DYNAMIC_GROUP_CONFIG where the group sets it and the node's value as
//     DEFAULT_CONFIG where not; the empty name: INVALID_REQUEST, as Kafka.
//   - Other resource types (broker loggers, client metrics):
//     INVALID_REQUEST.
//   - Nothing is sensitive: no Skein config holds a secret.
//
// Version notes: v1 sources and synonyms (KIP-226); v2 as v1; v3 config
// types and documentation (KIP-569); v4 flexible.

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(32, handler{min: 1, max: 4, handle: a.handleDescribeConfigs})
	})
}

// nodeConfig returns this node's configuration with the dynamic broker
// configs of im in force (the cluster-wide ones and this broker's own), as
// the metadata actor resolves the partitions' configs. Every valid entry
// applies; the controller stores no invalid one.
func (a *API) nodeConfig(im *image.Image) configs.Node {
	n, _ := a.Node.WithDynamic(im.BrokerConfigs, im.PerBrokerConfigs[a.Node.NodeID])
	return n
}

func (a *API) handleDescribeConfigs(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	im := a.Image()
	node := a.nodeConfig(im)
	z := c.authz()
	for _, rr := range req.Resources {
		r := kmsg.NewDescribeConfigsResponseResource()
		r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
		err, msg := z.configDenied(describeConfigs, rr.ResourceType, rr.ResourceName)
		var entries []configs.ConfigEntry
		if err == nil {
			entries, err, msg = a.describeResource(im, node, rr)
		}
		if err != nil {
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(msg)
			a.metrics.errorCode(32, req.Version, err.Code)
			resp.Resources = append(resp.Resources, r)
			continue
		}
		broker := rr.ResourceType == kmsg.ConfigResourceTypeBroker
		for _, e := range entries {
			if rr.ConfigNames != nil && !slices.Contains(rr.ConfigNames, e.Name) {
				continue
			}
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name, c.Value = e.Name, kmsg.StringPtr(e.Value)
			c.ReadOnly = broker && !configs.IsDynamicBrokerConfig(e.Name)
			c.Source = kmsg.ConfigSource(e.Source)
			if req.IncludeSynonyms {
				for _, s := range e.Synonyms {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name, cs.Value, cs.Source = s.Name, kmsg.StringPtr(s.Value), kmsg.ConfigSource(s.Source)
					c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
				}
			}
			c.ConfigType = kmsg.ConfigType(configs.TypeOf(e.Name))
			if req.IncludeDocumentation {
				if doc := configs.Doc(e.Name); doc != "" {
					c.Documentation = kmsg.StringPtr(doc)
				}
			}
			r.Configs = append(r.Configs, c)
		}
		resp.Resources = append(resp.Resources, r)
	}
	return respond(resp)
}

// describeResource returns the config entries of one resource, or the
// error to answer for it.
func (a *API) describeResource(im *image.Image, node configs.Node, rr kmsg.DescribeConfigsRequestResource) ([]configs.ConfigEntry, *kerr.Error, string) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if msg := controller.ValidateTopicName(rr.ResourceName); msg != "" {
			return nil, kerr.InvalidTopicException, msg
		}
		t := im.Topic(rr.ResourceName)
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition, fmt.Sprintf("The topic '%s' does not exist.", rr.ResourceName)
		}
		entries, err := configs.DescribeTopic(node, t.Configs)
		if err != nil {
			// The controller validated the topic's configs: only a node
			// whose own settings make them invalid gets here.
			return nil, kerr.InvalidConfig, err.Error()
		}
		return entries, nil, ""
	case kmsg.ConfigResourceTypeBroker:
		if rr.ResourceName == "" {
			return configs.DescribeBroker(node, true), nil, ""
		}
		if err, msg := a.checkBrokerName(rr.ResourceName); err != nil {
			return nil, err, msg
		}
		return configs.DescribeBroker(node, false), nil, ""
	case kmsg.ConfigResourceTypeGroupConfig:
		if rr.ResourceName == "" {
			return nil, kerr.InvalidRequest, "Group name must not be empty"
		}
		return configs.DescribeGroup(node, im.GroupConfigs[rr.ResourceName]), nil, ""
	}
	return nil, kerr.InvalidRequest, fmt.Sprintf("Unsupported resource type: %v", rr.ResourceType)
}

// checkBrokerName checks that a broker resource's name is this node's id:
// a broker describes and alters only its own per-broker configs, as
// Kafka's ConfigAdminManager insists.
func (a *API) checkBrokerName(name string) (*kerr.Error, string) {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return kerr.InvalidRequest, fmt.Sprintf("Broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != a.Node.NodeID {
		return kerr.InvalidRequest, fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", a.Node.NodeID, name)
	}
	return nil, ""
}
