package transport

// DeleteAcls: v1-3
//
// Behaviour:
//   - Without an authorizer: SECURITY_DISABLED on every filter.
//   - Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
//     filter).
//   - The controller removes the ACLs each filter selects
//     (controller.DeleteACLs) and answers, per filter, those it matched;
//     an ACL two filters select is removed once and listed under both. A
//     filter with an UNKNOWN code is INVALID_REQUEST with the reason.
//
// Version notes: v1 pattern types (KIP-290); v2 flexible.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/security"
)

func (a *API) handleDeleteAcls(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	z := c.authz()
	failAll := func(err *kerr.Error, msg string) finish {
		for range req.Filters {
			r := kmsg.NewDeleteACLsResponseResult()
			r.ErrorCode, r.ErrorMessage = err.Code, kmsg.StringPtr(msg)
			resp.Results = append(resp.Results, r)
			a.metrics.errorCode(31, req.Version, err.Code)
		}
		return respond(resp)
	}
	if !z.on() {
		return failAll(kerr.SecurityDisabled, noAuthorizer)
	}
	if !z.may(alter, clusterResource, clusterName) {
		return failAll(kerr.ClusterAuthorizationFailed, z.denial(alter, clusterResource, clusterName))
	}
	cmd := &controller.DeleteACLs{}
	for _, f := range req.Filters {
		cmd.Filters = append(cmd.Filters, security.ACLFilter{ResourceType: f.ResourceType, ResourceName: f.ResourceName,
			PatternType: f.ResourcePatternType, Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType})
	}
	return func() kmsg.Response {
		res, err := a.askController(cmd)
		if err != nil {
			res = cmd.Failed(kerr.RequestTimedOut, err.Error())
		}
		for _, r := range res.(*controller.DeleteACLsResult).Results {
			rr := kmsg.NewDeleteACLsResponseResult()
			if r.Err != nil {
				rr.ErrorCode, rr.ErrorMessage = r.Err.Code, kmsg.StringPtr(r.Message)
				a.metrics.errorCode(31, req.Version, r.Err.Code)
			}
			for _, acl := range r.Deleted {
				m := kmsg.NewDeleteACLsResponseResultMatchingACL()
				m.ResourceType, m.ResourceName, m.ResourcePatternType = acl.ResourceType, acl.ResourceName, acl.PatternType
				m.Principal, m.Host, m.Operation, m.PermissionType = acl.Principal, acl.Host, acl.Operation, acl.Permission
				rr.MatchingACLs = append(rr.MatchingACLs, m)
			}
			resp.Results = append(resp.Results, rr)
		}
		return resp
	}
}
