//go:build !race

package nodetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/testcerts"
)

// TestFollowersFetchOverMutualTLS: three nodes whose inter-broker listener
// is SSL with client certificates required and an authorizer on:
// followers fetch from leaders over mutual TLS as User:CN=skein-node (a
// super user), so an acks=all write to a topic of three replicas is
// acknowledged and every replica stays in sync; a process with a
// certificate of the same CA for another principal is refused a
// follower's fetch (CLUSTER_AUTHORIZATION_FAILED), and one without a
// certificate is refused in the handshake.
func TestFollowersFetchOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.New(t)
	nodeCert, nodePEM := ca.Issue(t, pkix.Name{CommonName: "skein-node"}, true)
	intruder, _ := ca.Issue(t, pkix.Name{CommonName: "intruder"}, false)
	keystore, truststore := filepath.Join(dir, "node.pem"), filepath.Join(dir, "ca.pem")
	testcerts.WriteFile(t, keystore, nodePEM)
	testcerts.WriteFile(t, truststore, ca.PEM)
	c := Start(t, 3, func(cfg *configs.Node) {
		cfg.Listeners = "SSL://127.0.0.1:0,CONTROLLER://" + cfg.ClusterListen
		cfg.ControllerListenerNames = "CONTROLLER"
		cfg.ListenerSecurityProtocolMap = "SSL:SSL,CONTROLLER:SSL"
		cfg.InterBrokerListenerName = "SSL"
		cfg.TLS.KeystoreLocation, cfg.TLS.TruststoreLocation, cfg.TLS.ClientAuth = keystore, truststore, "required"
		cfg.AuthorizerClassName = configs.StandardAuthorizer
		cfg.SuperUsers = "User:CN=skein-node"
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	clientTLS := func(certs ...tls.Certificate) *tls.Config {
		return &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}
	}
	var seeds []string
	for i := range c.Nodes {
		seeds = append(seeds, c.Addr(i))
	}
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(clientTLS(nodeCert)), kgo.DefaultProduceTopic("tls-rf3"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "tls-rf3"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "acks=all writes to tls-rf3 acknowledged, every replica in sync", func() string {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
			return err.Error()
		}
		td, err := adm.ListTopics(ctx, "tls-rf3")
		if err != nil {
			return err.Error()
		}
		for _, p := range td["tls-rf3"].Partitions.Sorted() {
			if len(p.ISR) != 3 {
				return fmt.Sprintf("partition %d: ISR %v", p.Partition, p.ISR)
			}
		}
		return ""
	})

	// A follower's fetch from another process: refused by the authorizer
	// with a certificate of the CA for another principal, in the
	// handshake without a certificate.
	fetch := func(certs ...tls.Certificate) error {
		other, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.DialTLSConfig(clientTLS(certs...)), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 1
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
		resp, err := req.RequestWith(ctx, other)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	if err := fetch(intruder); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("a follower's fetch as User:CN=intruder: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if err := fetch(); err == nil || errors.Is(err, kerr.ClusterAuthorizationFailed) || slices.Contains([]error{kerr.StaleBrokerEpoch}, err) {
		t.Errorf("a follower's fetch without a certificate: %v, want the handshake refused", err)
	}
}
