package transport

// UpdateFeatures: v0-2
//
// Behaviour:
//   - With an authorizer: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED
//     otherwise.
//   - Any node takes it and asks the active controller (forwarded over
//     remoting when that is another node), which decides every update as
//     Kafka 4.2's QuorumController does (controller.UpdateFeatures): the
//     level must be in the range the active controller's node and every
//     registered broker, fenced or not, support (a feature a broker does
//     not know supports 0 only); a lower level needs a safe or unsafe
//     downgrade type, a higher one an upgrade; a metadata.version
//     downgrade across a level that changed Kafka's metadata records is
//     refused either way. The first update refused refuses the request,
//     INVALID_UPDATE_VERSION with Kafka's message; otherwise every level
//     is written to the metadata log at once (FeatureLevel records), and
//     ApiVersions reports them. ValidateOnly (v1+) writes nothing.
//   - The answer carries one top-level error; on success v0-1 also list
//     every feature with code 0 and message "NONE", as Kafka does.
//
// Version notes: v0's AllowDowngrade is ignored, as Kafka's controller
// ignores it (the upgrade type defaults to an upgrade); v1 adds UpgradeType
// and ValidateOnly; v2 drops the per-feature results.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(57, handler{min: 0, max: 2, handle: a.handleUpdateFeatures})
	})
}

func (a *API) handleUpdateFeatures(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.UpdateFeaturesRequest)
	answer := func(err *kerr.Error, msg string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
			a.metrics.errorCode(57, req.Version, err.Code)
			return resp
		}
		if req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				r.Feature, r.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
				resp.Results = append(resp.Results, r)
			}
		}
		return resp
	}
	if z := c.authz(); !z.may(alter, clusterResource, clusterName) {
		return respond(answer(kerr.ClusterAuthorizationFailed, z.denial(alter, clusterResource, clusterName)))
	}
	cmd := &controller.UpdateFeatures{ValidateOnly: req.ValidateOnly}
	for _, u := range req.FeatureUpdates {
		typ := u.UpgradeType
		if req.Version == 0 {
			typ = controller.UpgradeTypeUpgrade
		}
		cmd.Updates = append(cmd.Updates, controller.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, Type: typ})
	}
	return func() kmsg.Response {
		res, err := a.askController(cmd)
		if err != nil {
			return answer(kerr.RequestTimedOut, err.Error())
		}
		r := res.(*controller.UpdateFeaturesResult)
		return answer(r.Err, r.Message)
	}
}
