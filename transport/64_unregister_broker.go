package transport

// UnregisterBroker: v0
//
// Behaviour:
//   - With an authorizer: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED
//     otherwise.
//   - Any node takes it and asks the active controller (forwarded over
//     remoting when that is another node), which removes the broker's
//     registration from the metadata (controller.UnregisterBroker), as
//     Kafka does, whatever the broker's state: it leaves every ISR it is in
//     (but a partition's last member, which keeps the partition's data
//     known) and leads nothing, and Metadata and DescribeCluster no longer
//     list it. Meant for a broker gone for good, which would otherwise hold
//     feature upgrades back (UpdateFeatures checks every registered
//     broker). A node of that id that runs, or runs again, registers again.
//   - An id not registered is BROKER_ID_NOT_REGISTERED, "Broker ID <id> is
//     not currently registered", as Kafka answers.
//
// Version notes: v0 only, flexible (KIP-631).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(64, handler{min: 0, max: 0, handle: a.handleUnregisterBroker})
	})
}

func (a *API) handleUnregisterBroker(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.UnregisterBrokerRequest)
	answer := func(err *kerr.Error, msg string) kmsg.Response {
		resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
			a.metrics.errorCode(64, req.Version, err.Code)
		}
		return resp
	}
	if z := c.authz(); !z.may(alter, clusterResource, clusterName) {
		return respond(answer(kerr.ClusterAuthorizationFailed, z.denial(alter, clusterResource, clusterName)))
	}
	cmd := &controller.UnregisterBroker{ID: req.BrokerID}
	return func() kmsg.Response {
		res, err := a.askController(cmd)
		if err != nil {
			return answer(kerr.RequestTimedOut, err.Error())
		}
		r := res.(*controller.UnregisterBrokerResult)
		return answer(r.Err, r.Message)
	}
}
