package transport

// IncrementalAlterConfigs: v0-1
//
// Behaviour:
//   - With an authorizer: ALTER_CONFIGS as AlterConfigs
//     (33_alter_configs.go).
//   - Each resource's configs are changed one operation at a time: SET,
//     DELETE (back to the default, or for a topic to the broker's), and
//     APPEND and SUBTRACT for list configs (cleanup.policy,
//     log.cleanup.policy; others are INVALID_CONFIG). A config named twice
//     in one resource is INVALID_REQUEST.
//   - Resources, validation, ValidateOnly and when changes take effect are
//     as AlterConfigs's (33_alter_configs.go): topics, brokers named ""
//     (every broker) or by this node's id, with the dynamic broker
//     configs only, and groups; delegated to the controller.
//
// Version notes: v0 (KIP-339); v1 flexible.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(44, handler{min: 0, max: 1, handle: a.handleIncrementalAlterConfigs})
	})
}

func (a *API) handleIncrementalAlterConfigs(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	resources := make([]alterResource, len(req.Resources))
	z := c.authz()
	for i, rr := range req.Resources {
		if err, msg := z.configDenied(alterConfigs, rr.ResourceType, rr.ResourceName); err != nil {
			resources[i] = alterResource{err: err, msg: msg}
			continue
		}
		rsc := controller.ConfigResource{Name: rr.ResourceName}
		for _, c := range rr.Configs {
			rsc.Ops = append(rsc.Ops, controller.ConfigOp{Name: c.Name, Op: controller.OpType(c.Op), Value: c.Value})
		}
		resources[i] = a.alterResource(rr.ResourceType, rsc)
	}
	return func() kmsg.Response {
		a.alterConfigs(resources, req.ValidateOnly, true)
		resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for i, rr := range req.Resources {
			r := kmsg.NewIncrementalAlterConfigsResponseResource()
			r.ResourceType, r.ResourceName = rr.ResourceType, rr.ResourceName
			if e := resources[i]; e.err != nil {
				r.ErrorCode, r.ErrorMessage = e.err.Code, kmsg.StringPtr(e.msg)
				a.metrics.errorCode(44, req.Version, e.err.Code)
			}
			resp.Resources = append(resp.Resources, r)
		}
		return resp
	}
}
