package transport

// AlterUserScramCredentials: v0
//
// Behaviour:
//   - With an authorizer: ALTER on the cluster, CLUSTER_AUTHORIZATION_FAILED
//     for every user otherwise.
//   - Deletions and upsertions of users' SCRAM credentials, decided by the
//     active controller with Kafka's rules (controller/scram.go); one
//     result per user. For an upsertion this node derives the stored and
//     server keys from the salted password the client sent (RFC 5802), so
//     that only they reach the metadata log.
//   - An unknown mechanism: UNSUPPORTED_SASL_MECHANISM; iterations outside
//     4096-16384 or an empty salt: UNACCEPTABLE_CREDENTIAL; a user altered
//     twice for one mechanism: DUPLICATE_RESOURCE; deleting a credential
//     that does not exist: RESOURCE_NOT_FOUND.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/security"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(51, handler{min: 0, max: 0, handle: a.handleAlterUserScramCredentials})
	})
}

func scramMechanism(id int8) string {
	for name, n := range scramMechanismIDs {
		if n == id {
			return name
		}
	}
	return "UNKNOWN"
}

func (a *API) handleAlterUserScramCredentials(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.AlterUserSCRAMCredentialsRequest)
	cmd := &controller.AlterScramCredentials{}
	for _, d := range req.Deletions {
		cmd.Deletions = append(cmd.Deletions, image.DeleteScram{User: d.Name, Mechanism: scramMechanism(d.Mechanism)})
	}
	for _, u := range req.Upsertions {
		up := image.SetScram{User: u.Name, Mechanism: scramMechanism(u.Mechanism), Salt: u.Salt, Iterations: u.Iterations}
		if up.Mechanism != "UNKNOWN" && len(u.SaltedPassword) > 0 {
			up.StoredKey, up.ServerKey = security.ScramKeys(up.Mechanism, u.SaltedPassword)
		}
		cmd.Upsertions = append(cmd.Upsertions, up)
	}
	z := c.authz()
	mayAlter := z.may(alter, clusterResource, clusterName)
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		var res any
		err := error(errDenied)
		if mayAlter {
			res, err = a.askController(cmd)
		}
		var results []controller.ScramUserResult
		switch {
		case err == errDenied:
			results = cmd.Failed(kerr.ClusterAuthorizationFailed, z.denial(alter, clusterResource, clusterName))
		case err != nil:
			results = cmd.Failed(kerr.RequestTimedOut, err.Error())
		default:
			results = res.(*controller.AlterScramCredentialsResult).Users
		}
		for _, u := range results {
			r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			r.User = u.User
			if u.Err != nil {
				r.ErrorCode, r.ErrorMessage = u.Err.Code, kmsg.StringPtr(u.Message)
				a.metrics.errorCode(51, req.Version, u.Err.Code)
			}
			resp.Results = append(resp.Results, r)
		}
		return resp
	}
}
