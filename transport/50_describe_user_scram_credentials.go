package transport

// DescribeUserScramCredentials: v0
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - The users asked for (all users with a credential when none are
//     named), each with its mechanisms and iterations, from this node's
//     image; never a salt or a key.
//   - A user named twice: DUPLICATE_RESOURCE; a user without a
//     credential: RESOURCE_NOT_FOUND, as Kafka answers.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(50, handler{min: 0, max: 0, handle: a.handleDescribeUserScramCredentials})
	})
}

// scramMechanismIDs are Kafka's ids of the SCRAM mechanisms (ScramMechanism).
var scramMechanismIDs = map[string]int8{"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}

func (a *API) handleDescribeUserScramCredentials(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if z := c.authz(); !z.may(describe, clusterResource, clusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		resp.ErrorMessage = kmsg.StringPtr(z.denial(describe, clusterResource, clusterName))
		return respond(resp)
	}
	im := a.Image()
	var users []string
	count := map[string]int{}
	if len(req.Users) == 0 {
		users = slices.Sorted(maps.Keys(im.Scram))
	}
	for _, u := range req.Users {
		if count[u.Name]++; count[u.Name] == 1 {
			users = append(users, u.Name)
		}
	}
	for _, user := range users {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = user
		creds := im.Scram[user]
		switch {
		case count[user] > 1:
			r.ErrorCode, r.ErrorMessage = kerr.DuplicateResource.Code, kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: "+user)
		case len(creds) == 0:
			r.ErrorCode, r.ErrorMessage = kerr.ResourceNotFound.Code, kmsg.StringPtr("Attempt to describe a user credential that does not exist: "+user)
		}
		if r.ErrorCode == 0 {
			for _, mech := range controller.ScramMechanisms {
				if c, ok := creds[mech]; ok {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = scramMechanismIDs[mech], c.Iterations
					r.CredentialInfos = append(r.CredentialInfos, ci)
				}
			}
		}
		a.metrics.errorCode(50, req.Version, r.ErrorCode)
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}
