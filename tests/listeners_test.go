package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// freePortOn returns a port free on host at the time of the call.
func freePortOn(t *testing.T, host string) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestKafkaServerPropertiesWithTwoListeners: `skein node --config
// server.properties` runs a Kafka KRaft server.properties as it is: two
// client listeners on their own addresses (PLAINTEXT, the inter-broker
// one, and EXTERNAL), the CONTROLLER listener as the node's remoting,
// log.dirs. A franz-go client on each listener is told the broker's
// address on that listener (Metadata, FindCoordinator, DescribeCluster),
// and records produced through one are consumed through the other.
func TestKafkaServerPropertiesWithTwoListeners(t *testing.T) {
	dir := t.TempDir()
	internal, external := "127.0.6.1", "127.0.6.2"
	plainAddr := net.JoinHostPort(internal, freePortOn(t, internal))
	extAddr := net.JoinHostPort(external, freePortOn(t, external))
	ctrlAddr := net.JoinHostPort(internal, freePortOn(t, internal))
	props := filepath.Join(dir, "server.properties")
	text := fmt.Sprintf(`# A Kafka 4 KRaft server.properties, combined roles
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@%[3]s
listeners=PLAINTEXT://%[1]s,EXTERNAL://%[2]s,CONTROLLER://%[3]s
advertised.listeners=PLAINTEXT://%[1]s,EXTERNAL://%[2]s
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
log.dirs=%[4]s
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
admin.listen=127.0.6.1:%[5]s
`, plainAddr, extAddr, ctrlAddr, filepath.Join(dir, "data"), freePortOn(t, internal))
	if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	n := newChildNode(t)
	n.config, n.addr = props, extAddr
	n.start()

	ctx := ctxFor(t)
	clientOn := func(addr string, opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("two-listeners")}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	for _, tc := range []struct{ listener, addr string }{{"PLAINTEXT", plainAddr}, {"EXTERNAL", extAddr}} {
		cl := clientOn(tc.addr)
		meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, fmt.Sprint(meta.Brokers[0].Port)) != tc.addr {
			t.Errorf("%s: Metadata brokers %+v, want one at %s", tc.listener, meta.Brokers, tc.addr)
		}
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{"two-listeners"}
		fresp, err := fc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if c := fresp.Coordinators[0]; c.ErrorCode != 0 || net.JoinHostPort(c.Host, fmt.Sprint(c.Port)) != tc.addr {
			t.Errorf("%s: FindCoordinator answered %+v, want %s", tc.listener, c, tc.addr)
		}
		cluster, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if b := cluster.Brokers; len(b) != 1 || net.JoinHostPort(b[0].Host, fmt.Sprint(b[0].Port)) != tc.addr {
			t.Errorf("%s: DescribeCluster brokers %+v, want one at %s", tc.listener, b, tc.addr)
		}
	}

	producer := clientOn(extAddr)
	if _, err := kadm.NewClient(producer).CreateTopic(ctx, 2, 1, nil, "two-listeners"); err != nil {
		t.Fatal(err)
	}
	const records = 50
	for i := range records {
		if err := producer.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consumer := clientOn(plainAddr, kgo.ConsumeTopics("two-listeners"), kgo.ConsumerGroup("two-listeners"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := map[string]bool{}
	for len(seen) < records {
		fetches := consumer.PollFetches(ctx)
		if err := fetches.Err(); err != nil {
			t.Fatal(err)
		}
		fetches.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	for i := range records {
		if !seen[fmt.Sprintf("v%d", i)] {
			t.Errorf("v%d not consumed", i)
		}
	}
}

// TestKafkaKeyNotHonouredRefused: a setting Skein does not honour, in a
// server.properties, stops the node at start with a message naming it;
// nothing is silently ignored.
func TestKafkaKeyNotHonouredRefused(t *testing.T) {
	dir := t.TempDir()
	props := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(props, []byte("log.dirs="+filepath.Join(dir, "data")+"\nlisteners=PLAINTEXT://127.0.0.1:0\nsasl.kerberos.service.name=kafka\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := exec.CommandContext(ctx, skeinBinary(t), "node", "--config", props).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "sasl.kerberos.service.name") {
		t.Fatalf("skein node: %v, output:\n%s\nwant a refusal naming sasl.kerberos.service.name", err, out)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "data")); statErr == nil {
		t.Errorf("the refused node made its data dir")
	}
}
