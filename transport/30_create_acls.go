package transport

// CreateAcls: v1-3
//
// Behaviour:
//   - Without an authorizer: SECURITY_DISABLED on every creation.
//   - Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
//     creation).
//   - The controller adds them to the metadata log (controller.CreateACLs):
//     an ACL Kafka would refuse (an ANY or UNKNOWN code, a principal that
//     is not Type:name, PREFIXED on "*", an operation its resource type
//     has not) is INVALID_REQUEST with the reason; one that exists
//     already succeeds without a change. The answer comes once this node
//     has applied them, so this node authorizes with them at once; the
//     other nodes follow within their metadata lag.
//
// Version notes: v1 pattern types (KIP-290); v2 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/security"
)

func (a *API) handleCreateAcls(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	z := c.authz()
	failAll := func(err *kerr.Error, msg string) finish {
		for range req.Creations {
			r := kmsg.NewCreateACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, r)
			a.metrics.errorCode(30, req.Version, err.Code)
		}
		return respond(resp)
	}
	if !z.on() {
		return failAll(kerr.SecurityDisabled, noAuthorizer)
	}
	if !z.may(alter, clusterResource, clusterName) {
		return failAll(kerr.ClusterAuthorizationFailed, z.denial(alter, clusterResource, clusterName))
	}
	cmd := &controller.CreateACLs{}
	for _, cr := range req.Creations {
		cmd.ACLs = append(cmd.ACLs, security.ACL{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
			Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType})
	}
	return func() kmsg.Response {
		res, err := a.askController(cmd)
		if err != nil {
			res = cmd.Failed(kerr.RequestTimedOut, err.Error())
		}
		for _, r := range res.(*controller.CreateACLsResult).Results {
			rr := kmsg.NewCreateACLsResponseResult()
			if r.Err != nil {
				rr.ErrorCode, rr.ErrorMessage = r.Err.Code, kmsg.StringPtr(r.Message)
				a.metrics.errorCode(30, req.Version, r.Err.Code)
			}
			resp.Results = append(resp.Results, rr)
		}
		return resp
	}
}
