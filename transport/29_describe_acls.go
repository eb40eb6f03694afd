package transport

// DescribeAcls: v1-3
//
// Behaviour:
//   - Without an authorizer (authorizer.class.name empty):
//     SECURITY_DISABLED, as Kafka.
//   - Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
//   - Answered from this node's image: the ACLs the filter selects
//     (security.ACLFilter), grouped by resource pattern, sorted. A filter
//     Kafka would refuse (UNKNOWN codes) is INVALID_REQUEST with the
//     reason.
//
// Version notes: v1 pattern types (KIP-290); v2 flexible.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/security"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(29, handler{min: 1, max: 3, handle: a.handleDescribeAcls})
		a.register(30, handler{min: 1, max: 3, handle: a.handleCreateAcls})
		a.register(31, handler{min: 1, max: 3, handle: a.handleDeleteAcls})
	})
}

// noAuthorizer is Kafka's message when ACLs are asked of a broker
// without an authorizer.
const noAuthorizer = "No Authorizer is configured."

func (a *API) handleDescribeAcls(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	z := c.authz()
	fail := func(err *kerr.Error, msg string) finish {
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		a.metrics.errorCode(29, req.Version, err.Code)
		return respond(resp)
	}
	if !z.on() {
		return fail(kerr.SecurityDisabled, noAuthorizer)
	}
	if !z.may(describe, clusterResource, clusterName) {
		return fail(kerr.ClusterAuthorizationFailed, z.denial(describe, clusterResource, clusterName))
	}
	f := security.ACLFilter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if why := f.Validate(); why != "" {
		return fail(kerr.InvalidRequest, why)
	}
	var matched []security.ACL
	for acl := range a.Image().ACLs {
		if f.Matches(acl) {
			matched = append(matched, acl)
		}
	}
	slices.SortFunc(matched, security.CompareACLs)
	for _, acl := range matched {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != acl.ResourceType || resp.Resources[n-1].ResourceName != acl.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != acl.PatternType {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = acl.ResourceType, acl.ResourceName, acl.PatternType
			resp.Resources = append(resp.Resources, r)
			n++
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = acl.Principal, acl.Host, acl.Operation, acl.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, e)
	}
	return respond(resp)
}
