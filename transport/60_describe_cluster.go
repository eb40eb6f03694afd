package transport

// DescribeCluster: v0-2
//
// Behaviour:
//   - The cluster id, the active controller and the registered brokers
//     from the newest image, as Metadata reports them (a controller-only
//     active controller is given as this node): fenced brokers only
//     when IncludeFencedBrokers (v2) asks, marked IsFenced.
//   - EndpointType (v1+): brokers (1) are served; controllers (2) are
//     MISMATCHED_ENDPOINT_TYPE, as a Kafka broker answers, since Skein
//     has no separate controller listener; any other value is
//     UNSUPPORTED_ENDPOINT_TYPE (KIP-919).
//   - Answered to anyone, as Kafka answers it; the cluster's authorized
//     operations when asked (KIP-430): 0 to a client that may not
//     DESCRIBE the cluster, -2147483648 when not asked.
//
// Version notes: v0 (KIP-700); v1 endpoint type (KIP-919); v2 fenced
// brokers (KIP-1073).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(60, handler{min: 0, max: 2, handle: a.handleDescribeCluster})
	})
}

// The endpoint types of DescribeCluster v1+ (KIP-919).
const (
	endpointBrokers     = 1
	endpointControllers = 2
)

func (a *API) handleDescribeCluster(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = req.EndpointType
	resp.ClusterAuthorizedOperations = authorizedOperationsUnset
	resp.ControllerID = -1
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = c.authz().clusterOperations()
	}
	if req.Version >= 1 && req.EndpointType != endpointBrokers {
		err, msg := kerr.UnsupportedEndpointType, "Unsupported endpoint type."
		if req.EndpointType == endpointControllers {
			err, msg = kerr.MismatchedEndpointType, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		a.metrics.errorCode(60, req.Version, err.Code)
		return respond(resp)
	}
	im := a.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = a.controllerForClients(im)
	ids := im.LiveBrokerIDs()
	if req.IncludeFencedBrokers {
		ids = im.BrokerIDs()
	}
	for _, id := range ids {
		b := im.Brokers[id]
		rb := kmsg.NewDescribeClusterResponseBroker()
		var ok bool
		if rb.Host, rb.Port, ok = b.Endpoint(c.listener); !ok {
			continue // as Metadata: only the brokers on the client's listener
		}
		rb.NodeID, rb.IsFenced = b.ID, b.Fenced
		rb.Rack = rack(b)
		resp.Brokers = append(resp.Brokers, rb)
	}
	return respond(resp)
}
