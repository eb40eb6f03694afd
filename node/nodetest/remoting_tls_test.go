//go:build !race

package nodetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/internal/testcerts"
	"github.com/skeinlog/skein/node"
)

// stranger is an actor system with plaintext remoting that the cluster
// does not know, as an attacker on the network could run. NB: started
// before the cluster, so that it shuts down after it.
func stranger(t *testing.T) *actor.ActorSystem {
	t.Helper()
	sys := actors.NewSystem(zerolog.Nop())
	r, _, err := actors.StartRemote(sys, actors.RemoteConfig{Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Shutdown(true)
		sys.Shutdown()
	})
	return sys
}

// strangerCreates sends every controller of c, from sys, a forwarded
// CreateTopics of topic.
func strangerCreates(t *testing.T, sys *actor.ActorSystem, c *Cluster, topic string) {
	t.Helper()
	body, err := msgpack.Marshal(&controller.CreateTopics{Topics: []controller.NewTopic{{Name: topic, NumPartitions: 1, ReplicationFactor: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	for i, addr := range c.cluster {
		pid := actor.NewPID(addr, node.Name(int32(i+1))+"/controller")
		sys.Root.Send(pid, &controller.Forward{Origin: actors.Origin{Node: 99, Incarnation: 1},
			Request: controller.RequestID{Node: 99, Incarnation: 1, Seq: uint64(i + 1)}, Kind: 1 /* CreateTopics */, Command: body})
	}
}

// TestRemotingMutualTLS: with the controller listener SSL (Kafka's
// CONTROLLER:SSL), a node's remoting is mutual TLS: a stranger without
// the cluster's certificate cannot make its controller create a topic,
// which on plaintext remoting it can (the control). NB: a cluster of one
// voter, which runs remoting as any clustered node does; a three-node form
// of this test met, under load, a node whose graceful stop did not end
// (node/2/fetchers/3 still live after 20 s), not yet explained.
func TestRemotingMutualTLS(t *testing.T) {
	for _, secured := range []bool{false, true} {
		t.Run(fmt.Sprintf("secured=%v", secured), func(t *testing.T) {
			dir := t.TempDir()
			ca := testcerts.New(t)
			_, nodePEM := ca.Issue(t, pkix.Name{CommonName: "skein-node"}, true)
			keystore, truststore := filepath.Join(dir, "node.pem"), filepath.Join(dir, "ca.pem")
			testcerts.WriteFile(t, keystore, nodePEM)
			testcerts.WriteFile(t, truststore, ca.PEM)
			sys := stranger(t)
			c := Start(t, 1, func(cfg *configs.Node) {
				cfg.Listeners = "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + cfg.ClusterListen
				cfg.ControllerListenerNames = "CONTROLLER"
				if secured {
					cfg.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"
					cfg.TLS.KeystoreLocation, cfg.TLS.TruststoreLocation = keystore, truststore
				}
			})
			ctx := context.Background()
			strangerCreates(t, sys, c, "strangers")
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(0)), kgo.DefaultProduceTopic("ours"))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, "ours"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "topic ours, written to", func() string {
				for i := range c.Nodes {
					if _, topics := metadata(t, ctx, c, i); len(topics) == 0 {
						return fmt.Sprintf("node %d has no topic", i+1)
					}
				}
				if err := cl.ProduceSync(ctx, kgo.StringRecord("x")).FirstErr(); err != nil {
					return err.Error()
				}
				return ""
			})
			// The stranger's command, sent before ours, is decided
			// before it if it is decided at all.
			var names []string
			for i := range c.Nodes {
				_, names = metadata(t, ctx, c, i)
				if secured && len(names) != 1 {
					t.Errorf("node %d: topics %v; the stranger's was created over mutual TLS", i+1, names)
				}
			}
			if !secured {
				waitFor(t, "the stranger's topic on plaintext remoting (the control)", func() string {
					if _, names := metadata(t, ctx, c, 0); len(names) != 2 {
						return fmt.Sprint(names)
					}
					return ""
				})
			}
		})
	}
}

// TestRemotingRefusesCertificatesNotOfBrokers: with an authorizer, a
// remoting peer's certificate must also map to a principal that may act
// as a broker (a super user here): one of the cluster's own CA for
// another principal is refused in the TLS handshake, before any message
// of it is read, and so can make the controller do nothing; the
// brokers' own certificate passes.
func TestRemotingRefusesCertificatesNotOfBrokers(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.New(t)
	_, nodePEM := ca.Issue(t, pkix.Name{CommonName: "skein-node"}, true)
	intruder, _ := ca.Issue(t, pkix.Name{CommonName: "intruder"}, true)
	broker, _ := ca.Issue(t, pkix.Name{CommonName: "skein-node"}, true)
	keystore, truststore := filepath.Join(dir, "node.pem"), filepath.Join(dir, "ca.pem")
	testcerts.WriteFile(t, keystore, nodePEM)
	testcerts.WriteFile(t, truststore, ca.PEM)
	c := Start(t, 1, func(cfg *configs.Node) {
		cfg.Listeners = "PLAINTEXT://127.0.0.1:0,CONTROLLER://" + cfg.ClusterListen
		cfg.ControllerListenerNames = "CONTROLLER"
		cfg.ListenerSecurityProtocolMap = "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"
		cfg.TLS.KeystoreLocation, cfg.TLS.TruststoreLocation = keystore, truststore
		cfg.AuthorizerClassName = configs.StandardAuthorizer
		cfg.SuperUsers = "User:CN=skein-node;User:ANONYMOUS"
	})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	// handshake dials remoting with cert and reads: a refused peer gets
	// the server's alert, an admitted one the server's first HTTP/2
	// frame (gRPC).
	handshake := func(cert tls.Certificate) error {
		conn, err := tls.Dial("tcp", c.cluster[0], &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"})
		if err != nil {
			return err
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = conn.Read(make([]byte, 1))
		return err
	}
	if err := handshake(broker); err != nil {
		t.Errorf("the brokers' certificate: %v, want admitted (the server's first frame read)", err)
	}
	if err := handshake(intruder); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Errorf("a certificate of the CA for User:CN=intruder: %v, want refused with bad certificate", err)
	}
}
