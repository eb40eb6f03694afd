package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/skeinlog/skein/configs"
)

// TestSCRAM: users' SCRAM credentials set with kadm's AlterUserSCRAMs
// (AlterUserScramCredentials; the salted password goes over the wire, the
// keys derived from it into the metadata log), described with
// DescribeUserSCRAMs, and used by franz-go's SCRAM-SHA-256 and -512
// clients on a SASL_PLAINTEXT listener; Kafka's errors for bad
// alterations; a deleted or changed credential stops working; the
// credentials outlive a restart.
func TestSCRAM(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "SCRAM-SHA-256,SCRAM-SHA-512"
	})
	ctx := ctxFor(t)
	adm := b.admin()
	mustCreate(t, ctx, adm, "scram", 1, nil)
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-512"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || altered.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, altered.Error())
	}
	described, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := described["alice"]; a.Err != nil || len(a.CredInfos) != 2 || a.CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha256, Iterations: 8192}) ||
		a.CredInfos[1] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 4096}) || len(described) != 2 {
		t.Errorf("DescribeUserSCRAMs: %+v", described)
	}

	addr := func() string { return b.node.ListenerAddr("SASL_PLAINTEXT").String() }
	connects := func(m sasl.Mechanism) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr()), kgo.SASL(m), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err = kmsg.NewPtrMetadataRequest().RequestWith(rctx, cl)
		return err
	}
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		want *kerr.Error
	}{
		{"alice SHA-256", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), nil},
		{"alice SHA-512", scram.Auth{User: "alice", Pass: "alice-512"}.AsSha512Mechanism(), nil},
		{"bob SHA-512", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(), nil},
		{"bob SHA-256 (he has none)", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
		{"alice, SHA-512 with the SHA-256 password", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed},
		{"an unknown user", scram.Auth{User: "mallory", Pass: "x"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
	} {
		if err := connects(tc.m); tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}

	// Kafka's refusals, per user; the others in the request still apply.
	// (Raw requests: kadm refuses bad iterations itself.)
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "carol", 1
	req.Deletions = append(req.Deletions, del)
	for _, u := range []struct {
		name       string
		mechanism  int8
		iterations int32
	}{{"dave", 1, 100}, {"erin", 1, 20000}, {"gina", 3, 4096}, {"henry", 2, 4096}, {"henry", 2, 4096}, {"frank", 1, 4096}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.name, u.mechanism, u.iterations, []byte("salt"), []byte("salted")
		req.Upsertions = append(req.Upsertions, up)
	}
	resp, err := req.RequestWith(ctx, b.client())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, r := range resp.Results {
		got[r.User] = r.ErrorCode
	}
	want := map[string]int16{"carol": kerr.ResourceNotFound.Code, "dave": kerr.UnacceptableCredential.Code, "erin": kerr.UnacceptableCredential.Code,
		"gina": kerr.UnsupportedSaslMechanism.Code, "henry": kerr.DuplicateResource.Code, "frank": 0}
	if len(resp.Results) != len(want) {
		t.Errorf("%d results, want one per user: %+v", len(resp.Results), resp.Results)
	}
	for user, code := range want {
		if got[user] != code {
			t.Errorf("alter %s: %v, want %v", user, kerr.ErrorForCode(got[user]), kerr.ErrorForCode(code))
		}
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "frank", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "frank-secret"}}); err != nil {
		t.Fatal(err)
	}
	dup := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for range 2 {
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "alice"
		dup.Users = append(dup.Users, u)
	}
	if resp, err := dup.RequestWith(ctx, b.client()); err != nil || len(resp.Results) != 1 || resp.Results[0].ErrorCode != kerr.DuplicateResource.Code {
		t.Errorf("alice described twice: %v %+v", err, resp)
	}
	if d, err := adm.DescribeUserSCRAMs(ctx, "nobody"); err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Errorf("describe a user without credentials: %v %+v", err, d)
	}

	// A changed password and a deleted credential stop working; what was
	// set survives a restart.
	if altered, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha512}},
		[]kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "new-secret"}}); err != nil || altered.Error() != nil {
		t.Fatalf("AlterUserSCRAMs: %v %v", err, altered.Error())
	}
	b.restart()
	for _, tc := range []struct {
		name string
		m    sasl.Mechanism
		want *kerr.Error
	}{
		{"alice's old password", scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(), kerr.SaslAuthenticationFailed},
		{"alice's new password, after a restart", scram.Auth{User: "alice", Pass: "new-secret"}.AsSha256Mechanism(), nil},
		{"bob, deleted", scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(), kerr.SaslAuthenticationFailed},
		{"frank, after a restart", scram.Auth{User: "frank", Pass: "frank-secret"}.AsSha256Mechanism(), nil},
	} {
		if err := connects(tc.m); tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestSCRAMBootstrapUsers: a new cluster given scram.bootstrap.users
// starts with those credentials, so that its first admin can log in (here
// a super user of an authorizing node) and create the other users.
func TestSCRAMBootstrapUsers(t *testing.T) {
	b := startBroker(t, func(c *configs.Node) {
		c.Listeners = "SASL_PLAINTEXT://127.0.0.1:0"
		c.EnabledMechanisms = "SCRAM-SHA-256,SCRAM-SHA-512"
		c.ScramBootstrapUsers = `SCRAM-SHA-256=[name=admin,password="admin,secret"]; SCRAM-SHA-512=[name=admin,password=p512,iterations=8192]`
		c.AuthorizerClassName = configs.StandardAuthorizer
		c.SuperUsers = "User:admin"
	})
	ctx := ctxFor(t)
	addr := b.node.ListenerAddr("SASL_PLAINTEXT").String()
	login := func(m sasl.Mechanism) *kadm.Client {
		return kadm.NewClient(b.client(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RequestRetries(0)))
	}
	admin512 := login(scram.Auth{User: "admin", Pass: "p512"}.AsSha512Mechanism())
	described, err := admin512.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a := described["admin"]; len(described) != 1 || len(a.CredInfos) != 2 ||
		a.CredInfos[0] != (kadm.CredInfo{Mechanism: kadm.ScramSha256, Iterations: 4096}) ||
		a.CredInfos[1] != (kadm.CredInfo{Mechanism: kadm.ScramSha512, Iterations: 8192}) {
		t.Errorf("DescribeUserSCRAMs: %+v", described)
	}
	admin := login(scram.Auth{User: "admin", Pass: "admin,secret"}.AsSha256Mechanism())
	altered, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"}})
	if err != nil || altered.Error() != nil {
		t.Fatalf("admin's AlterUserSCRAMs: %v %v", err, altered.Error())
	}
	alice := login(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism())
	if _, err := alice.BrokerMetadata(ctx); err != nil {
		t.Errorf("alice's first request: %v", err)
	}
}
