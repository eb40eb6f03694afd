package controller

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/security"
)

// ScramMechanisms are the SCRAM mechanisms credentials are kept for, as
// Kafka's ScramMechanism names them.
var ScramMechanisms = []string{"SCRAM-SHA-256", "SCRAM-SHA-512"}

// Kafka's bounds on a SCRAM credential's iterations.
const (
	MinScramIterations = 4096
	MaxScramIterations = 16384
)

// AlterScramCredentials sets and deletes users' SCRAM credentials
// (AlterUserScramCredentials). The broker that took the request derives
// the keys from the salted password: no password reaches the
// controller.
type AlterScramCredentials struct {
	Upsertions []image.SetScram    `msgpack:"up"`
	Deletions  []image.DeleteScram `msgpack:"del"`
}

// AlterScramCredentialsResult answers AlterScramCredentials: one result
// per user named, in the order first named.
type AlterScramCredentialsResult struct {
	Users []ScramUserResult `msgpack:"users"`
}

// ScramUserResult is one user's result.
type ScramUserResult struct {
	User    string      `msgpack:"user"`
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

func (*AlterScramCredentials) kind() commandKind      { return kindAlterScramCredentials }
func (*AlterScramCredentials) timeout() time.Duration { return 0 }
func (*AlterScramCredentials) newResult() any         { return &AlterScramCredentialsResult{} }
func (m *AlterScramCredentials) failed(err *kerr.Error, msg string) any {
	return &AlterScramCredentialsResult{Users: m.Failed(err, msg)}
}

// Failed returns every user's result as err: what the caller answers
// when the controller could not be asked.
func (m *AlterScramCredentials) Failed(err *kerr.Error, msg string) []ScramUserResult {
	var out []ScramUserResult
	for _, u := range m.users() {
		out = append(out, ScramUserResult{User: u, Err: err, Message: msg})
	}
	return out
}

// users returns the users named, each once, in the order first named.
func (m *AlterScramCredentials) users() []string {
	var out []string
	seen := map[string]bool{}
	add := func(u string) {
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	for _, d := range m.Deletions {
		add(d.User)
	}
	for _, u := range m.Upsertions {
		add(u.User)
	}
	return out
}

// decide applies Kafka's rules (ScramControlManager): a user named twice
// for one mechanism is DUPLICATE_RESOURCE, an unknown mechanism
// UNSUPPORTED_SASL_MECHANISM, an empty name or iterations out of bounds
// UNACCEPTABLE_CREDENTIAL, deleting what does not exist
// RESOURCE_NOT_FOUND; a user with any error changes nothing, the others
// all they asked.
func (m *AlterScramCredentials) decide(c *Controller) (any, []image.Record) {
	errs := map[string]ScramUserResult{}
	fail := func(user string, err *kerr.Error, msg string) {
		if _, ok := errs[user]; !ok {
			errs[user] = ScramUserResult{User: user, Err: err, Message: msg}
		}
	}
	named := map[[2]string]int{}
	for _, d := range m.Deletions {
		named[[2]string{d.User, d.Mechanism}]++
	}
	for _, u := range m.Upsertions {
		named[[2]string{u.User, u.Mechanism}]++
	}
	check := func(user, mech string) {
		switch {
		case user == "":
			fail(user, kerr.UnacceptableCredential, "Username must not be empty")
		case !validMechanism(mech):
			fail(user, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case named[[2]string{user, mech}] > 1:
			fail(user, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	for _, d := range m.Deletions {
		check(d.User, d.Mechanism)
		if _, ok := c.head.Scram[d.User][d.Mechanism]; !ok {
			fail(d.User, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		}
	}
	for _, u := range m.Upsertions {
		check(u.User, u.Mechanism)
		switch {
		case u.Iterations < MinScramIterations:
			fail(u.User, kerr.UnacceptableCredential, "Too few iterations")
		case u.Iterations > MaxScramIterations:
			fail(u.User, kerr.UnacceptableCredential, "Too many iterations")
		case len(u.Salt) == 0 || len(u.StoredKey) == 0 || len(u.ServerKey) == 0:
			fail(u.User, kerr.UnacceptableCredential, "Salt and salted password must not be empty")
		}
	}
	var records []image.Record
	for _, d := range m.Deletions {
		if _, bad := errs[d.User]; !bad {
			records = append(records, &image.DeleteScram{User: d.User, Mechanism: d.Mechanism})
		}
	}
	for _, u := range m.Upsertions {
		if _, bad := errs[u.User]; !bad {
			rec := u
			records = append(records, &rec)
		}
	}
	res := &AlterScramCredentialsResult{}
	for _, user := range m.users() {
		r, bad := errs[user]
		if !bad {
			r = ScramUserResult{User: user}
		}
		res.Users = append(res.Users, r)
	}
	return res, records
}

func validMechanism(m string) bool { return m == ScramMechanisms[0] || m == ScramMechanisms[1] }

// bootstrapScram derives the credentials of scram.bootstrap.users, for a
// new cluster: each salted afresh, so the password itself never reaches
// the metadata log.
func (c *Controller) bootstrapScram() []image.SetScram {
	users, err := c.cfg.Node.BootstrapScramUsers()
	if err != nil {
		c.cfg.Logger.Error().Err(err).Msg("scram.bootstrap.users: the cluster starts without them")
		return nil
	}
	var out []image.SetScram
	for _, u := range users {
		salt, stored, server, err := security.NewScramCredential(u.Mechanism, u.Password, u.Iterations)
		if err != nil {
			c.cfg.Logger.Error().Err(err).Str("user", u.Name).Msg("scram.bootstrap.users: cannot derive a credential")
			continue
		}
		out = append(out, image.SetScram{User: u.Name, Mechanism: u.Mechanism, Salt: salt, StoredKey: stored, ServerKey: server,
			Iterations: int32(u.Iterations)})
	}
	return out
}
