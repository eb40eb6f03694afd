//go:build !race

package nodetest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

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
	// Nor can it reach the quorum: remoting refuses it in the handshake,
	// with a certificate of the CA for another principal or without one.
	for what, certs := range map[string][]tls.Certificate{"User:CN=intruder": {intruder}, "no certificate": nil} {
		conn, err := tls.Dial("tcp", c.cluster[0], &tls.Config{RootCAs: roots, Certificates: certs, ServerName: "127.0.0.1"})
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		if err == nil {
			t.Errorf("remoting with %s: admitted", what)
		}
	}

	// A producer_byte_rate holds a client to its rate on the node that
	// leads its partition (quotas are per node, as Kafka's), while
	// another client produces as fast as it can.
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, "tls-quota"); err != nil {
		t.Fatal(err)
	}
	const quota = 512 << 10
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("slow")}},
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: quota}}}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, res)
	}
	rates := produceRates(t, seeds, clientTLS(nodeCert), "tls-quota", "slow", "fast")
	t.Logf("slow %.0f B/s (quota %d), fast %.0f B/s", rates["slow"], quota, rates["fast"])
	if r := rates["slow"]; r > 1.1*quota || r < 0.9*quota {
		t.Errorf("the throttled client produced %.0f B/s, want %d within 10%%", r, quota)
	}
	if rates["fast"] < 2*quota {
		t.Errorf("the client without a quota produced %.0f B/s, want well above the other's quota", rates["fast"])
	}
}

// produceRates runs a producer per client id, each as fast as it is let,
// for 14 s, and returns each one's rate over the last 10: the first
// seconds spend the bucket's burst (11 windows of 1 s, a node's default).
func produceRates(t *testing.T, seeds []string, tc *tls.Config, topic string, clients ...string) map[string]float64 {
	value := make([]byte, 16<<10)
	rand.Read(value) // quotas count bytes as sent: these do not compress
	rates := map[string]float64{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, client := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTLSConfig(tc), kgo.ClientID(client), kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			start, sent := time.Now(), 0
			var from time.Time
			for time.Since(start) < 14*time.Second {
				if from.IsZero() && time.Since(start) >= 4*time.Second {
					from, sent = time.Now(), 0
				}
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: value}).FirstErr(); err != nil {
					t.Errorf("%s: %v", client, err)
					return
				}
				sent += len(value)
			}
			mu.Lock()
			rates[client] = float64(sent) / time.Since(from).Seconds()
			mu.Unlock()
		}()
	}
	wg.Wait()
	return rates
}
