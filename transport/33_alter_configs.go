package transport

// AlterConfigs: v0-2
//
// Behaviour:
//   - With an authorizer: ALTER_CONFIGS on the topic, the group or, for a
//     broker, broker logger or client-metrics resource, the cluster; the
//     matching *_AUTHORIZATION_FAILED otherwise, with what would allow it.
//   - Each resource's configs are replaced by the ones given: a config not
//     named returns to its default (or, for a topic, to the broker's).
//     Delegated to the controller, which validates and writes the change to
//     the metadata log (controller/topics.go, planConfigs).
//   - Topic resources: every name must be a topic config and every value
//     valid for it, else INVALID_CONFIG; an unknown topic is
//     UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker resources, named "" (every broker, Kafka's
//     DYNAMIC_DEFAULT_BROKER_CONFIG) or by this node's id (this broker,
//     DYNAMIC_BROKER_CONFIG): only the dynamic broker configs, the broker
//     names of the topic configs (log.retention.ms, message.max.bytes,
//     log.cleanup.policy, ...). A static setting is INVALID_REQUEST, as
//     Kafka's "Cannot update these configs dynamically"; an unknown name or
//     a bad value is INVALID_CONFIG; another broker's id is INVALID_REQUEST
//     (that broker is the one to ask).
//   - Group resources (KIP-848 group configs), named by any group id but
//     "": consumer.session.timeout.ms and consumer.heartbeat.interval.ms,
//     within the node's group.consumer.min.* and group.consumer.max.*;
//     else INVALID_CONFIG worded as Kafka's. The group's coordinator reads
//     them at every heartbeat. The empty name is INVALID_REQUEST.
//   - Other resource types: INVALID_REQUEST. A resource named twice:
//     INVALID_REQUEST for each.
//   - ValidateOnly checks everything and changes nothing.
//   - Changes take effect without a restart and survive one: the metadata
//     actor resolves every hosted topic's config again and the partition
//     actors apply it (retention, segment rolling, validation of produced
//     batches). The answer waits, bounded by the request timeout, until
//     the partitions this node hosts publish the new config, so a client
//     that sees success finds the change in force here.
//
// Version notes: v1 throttling; v2 flexible.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(33, handler{min: 0, max: 2, handle: a.handleAlterConfigs})
	})
}

func (a *API) handleAlterConfigs(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AlterConfigsRequest)
	resources := make([]alterResource, len(req.Resources))
	z := c.authz()
	for i, rr := range req.Resources {
		if err, msg := z.configDenied(alterConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			resources[i] = alterResource{err: err, msg: msg}
			continue
		}
		rsc := controller.ConfigResource{Name: rr.ResourceName}
		for _, c := range rr.Configs {
			rsc.Ops = append(rsc.Ops, controller.ConfigOp{Name: c.Name, Op: controller.OpSet, Value: c.Value})
		}
		resources[i] = a.alterResource(rr.ResourceType, rsc)
	}
	return func() kmsg.Response {
		a.alterConfigs(resources, req.ValidateOnly, false)
		resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
		for i, rr := range req.Resources {
			r := kmsg.NewAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			if e := resources[i]; e.err != nil {
				r.ErrorCode, r.ErrorMessage = e.err.Code, kmsg.StringPtr(e.msg)
				a.metrics.errorCode(33, req.Version, e.err.Code)
			}
			resp.Resources = append(resp.Resources, r)
		}
		return resp
	}
}

// alterResource is one resource of an AlterConfigs or
// IncrementalAlterConfigs request and its outcome.
type alterResource struct {
	rsc controller.ConfigResource
	err *kerr.Error
	msg string
}

// alterResource checks what the controller cannot: the resource type, and
// that a broker resource names every broker or this one.
func (a *API) alterResource(typ kmsg.ConfigResourceType, rsc controller.ConfigResource) alterResource {
	r := alterResource{rsc: rsc}
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		r.rsc.Type = image.ResourceTopic
	case kmsg.ConfigResourceTypeBroker:
		r.rsc.Type = image.ResourceBroker
		if rsc.Name != "" {
			r.err, r.msg = a.checkBrokerName(rsc.Name)
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		// The groups' coordinators read them at every heartbeat: nothing
		// to wait for once committed.
		r.rsc.Type = image.ResourceGroup
	default:
		r.err, r.msg = kerr.InvalidRequest, "Unsupported resource type: "+typ.String()
	}
	return r
}

// alterConfigs sends the resources that passed alterResource to the
// controller, fills in each one's outcome and, when something changed,
// waits for this node's partitions to apply it.
func (a *API) alterConfigs(resources []alterResource, validateOnly, incremental bool) {
	cmd := &controller.AlterConfigs{ValidateOnly: validateOnly, Incremental: incremental}
	var sent []*alterResource
	for i := range resources {
		if resources[i].err == nil {
			cmd.Resources = append(cmd.Resources, resources[i].rsc)
			sent = append(sent, &resources[i])
		}
	}
	if len(sent) == 0 {
		return
	}
	res, err := a.askController(cmd)
	topics, brokers := map[string]bool{}, false
	for i, r := range sent {
		if err != nil {
			r.err, r.msg = kerr.RequestTimedOut, err.Error()
			continue
		}
		cr := res.(*controller.AlterConfigsResult).Resources[i]
		if cr.Err != nil {
			r.err, r.msg = cr.Err, cr.Message
			continue
		}
		switch r.rsc.Type {
		case image.ResourceBroker:
			brokers = true
		case image.ResourceTopic:
			topics[r.rsc.Name] = true
		}
	}
	if !validateOnly && (brokers || len(topics) > 0) {
		a.awaitConfigs(func(topic string) bool { return brokers || topics[topic] })
	}
}

// awaitConfigs waits until every partition this node hosts of the topics
// that affected selects publishes the config the newest image gives it, or
// the request timeout passes. It reads views and waits on their
// publication (Handle.Watch), never polls; a partition still loading is
// skipped, as it starts from the metadata actor's newest config.
func (a *API) awaitConfigs(affected func(topic string) bool) {
	deadline := time.NewTimer(a.RequestTimeout)
	defer deadline.Stop()
	published := make(chan struct{}, 1)
	for {
		im := a.Image()
		node := a.nodeConfig(im)
		var cancels []func()
		pending := false
		for _, h := range a.Partitions.All() {
			t := im.Topic(h.Topic)
			if !affected(h.Topic) || t == nil || t.ID != h.TopicID {
				continue
			}
			want, err := configs.ResolveTopic(node, t.Configs)
			if err != nil {
				continue
			}
			// Watch before looking, so that a publication in between is
			// not missed.
			cancels = append(cancels, h.Watch(published))
			if !configApplied(h, want) {
				pending = true
			}
		}
		if !pending {
			for _, c := range cancels {
				c()
			}
			return
		}
		expired := false
		select {
		case <-published:
		case <-deadline.C:
			expired = true
		}
		for _, c := range cancels {
			c()
		}
		if expired {
			// The change is committed and will apply; the client is not
			// kept waiting longer.
			a.Logger.Warn().Msg("AlterConfigs: the partitions did not apply the new configs within the request timeout")
			return
		}
	}
}

func configApplied(h *partition.Handle, want configs.Topic) bool {
	v := h.View()
	return v == nil || v.Config == want
}
