package transport

// AlterClientQuotas: v0-1
//
// Behaviour:
//   - With an authorizer: ALTER_CONFIGS on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED on every entry otherwise.
//   - The controller checks each entity and its ops as Kafka's
//     ClientQuotaControlManager (controller.AlterClientQuotas): user,
//     client-id or both take producer_byte_rate, consumer_byte_rate,
//     request_percentage and controller_mutation_rate; ip takes
//     connection_creation_rate; values above 0, whole for the rates of
//     bytes and connections; anything else is INVALID_REQUEST with Kafka's
//     message, and that entity changes nothing. ValidateOnly changes
//     nothing at all.
//   - Every node enforces the quotas from its own image (quotas.go).
//
// Version notes: v1 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func (a *API) handleAlterClientQuotas(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AlterClientQuotasRequest)
	cmd := &controller.AlterClientQuotas{ValidateOnly: req.ValidateOnly}
	for _, e := range req.Entries {
		var alt controller.QuotaAlteration
		for _, p := range e.Entity {
			alt.Entity = append(alt.Entity, controller.QuotaEntityPart{Type: p.Type, Name: p.Name})
		}
		for _, op := range e.Ops {
			alt.Ops = append(alt.Ops, controller.QuotaOp{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		cmd.Entries = append(cmd.Entries, alt)
	}
	answer := func(res *controller.AlterClientQuotasResult) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for i, e := range req.Entries {
			r := kmsg.NewAlterClientQuotasResponseEntry()
			for _, p := range e.Entity {
				part := kmsg.NewAlterClientQuotasResponseEntryEntity()
				part.Type, part.Name = p.Type, p.Name
				r.Entity = append(r.Entity, part)
			}
			if err := res.Results[i].Err; err != nil {
				r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(res.Results[i].Message)
				a.metrics.errorCode(49, req.Version, err.Code)
			}
			resp.Entries = append(resp.Entries, r)
		}
		return resp
	}
	if z := c.authz(); !z.may(alterConfigs, clusterResource, clusterName) {
		return respond(answer(cmd.Failed(kerr.ClusterAuthorizationFailed, z.denial(alterConfigs, clusterResource, clusterName))))
	}
	return func() kmsg.Response {
		res, err := a.askController(cmd)
		if err != nil {
			return answer(cmd.Failed(kerr.RequestTimedOut, err.Error()))
		}
		return answer(res.(*controller.AlterClientQuotasResult))
	}
}
