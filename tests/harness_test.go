package tests

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
)

// broker is a node started in this process for one test.
type broker struct {
	t    *testing.T
	cfg  configs.Node
	node *node.Node
	// adminUser and adminPassword, when set, authenticate the admin API
	// requests (a node with SASL listeners asks for them).
	adminUser, adminPassword string
}

// startBroker starts a single node on a free loopback port with its data in
// a temporary directory. edit, if given, changes the configuration first.
func startBroker(t *testing.T, edit ...func(*configs.Node)) *broker {
	t.Helper()
	cfg := configs.Default()
	cfg.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Listen, cfg.Advertise = "127.0.0.1:0", "127.0.0.1:0"
	cfg.AdminListen = "127.0.0.1:0"
	cfg.LogLevel = "warn"
	// Kafka's group.initial.rebalance.delay.ms (3 s) would make every
	// group test wait for it; TestGroupInitialRebalanceDelay sets it back.
	cfg.GroupInitialRebalanceDelayMs = 0
	// The fault tests inject through the admin API; TestChaosRefused
	// turns it off.
	cfg.ChaosEnable = true
	for _, e := range edit {
		e(&cfg)
	}
	b := &broker{t: t, cfg: cfg}
	b.start()
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *broker) start() {
	b.t.Helper()
	n, err := node.Start(b.cfg, zerolog.New(zerolog.NewTestWriter(b.t)).Level(zerolog.WarnLevel))
	if err != nil {
		b.t.Fatal(err)
	}
	b.node = n
	// A restart must come back on the same port, for clients that cached it.
	b.cfg.Listen = n.Addr().String()
	b.cfg.Advertise = b.cfg.Listen
}

func (b *broker) stop() {
	if b.node == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.node.Stop(ctx); err != nil {
		b.t.Errorf("stop: %v", err)
	}
	b.node = nil
}

func (b *broker) restart() {
	b.t.Helper()
	b.stop()
	b.start()
}

func (b *broker) addr() string { return b.cfg.Listen }

// client returns a franz-go client for the broker, closed at the end of the
// test.
func (b *broker) client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr())}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

func (b *broker) admin() *kadm.Client { return kadm.NewClient(b.client()) }

// ctxFor returns the context of a test's client calls: it only keeps a
// hung call from outliving the test, so it spans a whole test, which on a
// loaded machine may take minutes (TestExtensionMirrorRemote, restarts and
// all, took over a minute beside tests/cluster; its last calls then failed
// on an expired minute-long context). Each step bounds its own wait
// (eventually).
func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
