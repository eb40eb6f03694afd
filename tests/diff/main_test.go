//go:build kafkadiff

package diff

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/node"
	"github.com/skeinlog/skein/tests/kafkaref"
)

var classpath = flag.String("kafkaref.classpath", os.Getenv("KAFKAREF_CLASSPATH"),
	"Kafka's classpath (tests/kafkaref/target/classpath.txt's contents); empty: run mvn on tests/kafkaref/pom.xml")

// shared are the settings both brokers run with, where they differ from
// either's default or where the test depends on them: no initial rebalance
// delay (each group case would wait 3 s for it), internal topics that fit
// one node.
var shared = map[string]string{
	"num.partitions":                                   "1",
	"auto.create.topics.enable":                        "true",
	"group.initial.rebalance.delay.ms":                 "0",
	"offsets.topic.replication.factor":                 "1",
	"transaction.state.log.replication.factor":         "1",
	"transaction.state.log.min.isr":                    "1",
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

// run starts the two brokers, runs the cases and stops the brokers; the
// work directory (both brokers' data and logs) is kept when anything
// failed.
func run(m *testing.M) int {
	work, err := os.MkdirTemp("", "skein-diff-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := start(m, work)
	if code == 0 {
		os.RemoveAll(work)
	} else {
		fmt.Fprintf(os.Stderr, "diff: work directory kept: %s (kafka/kafka.log, skein.log)\n", work)
	}
	return code
}

// resolveClasspath resolves Kafka's classpath: -kafkaref.classpath, or
// Maven on tests/kafkaref/pom.xml.
func resolveClasspath() (string, error) {
	if *classpath != "" {
		return *classpath, nil
	}
	_, file, _, _ := runtime.Caller(0)
	cp, err := kafkaref.Classpath(filepath.Join(filepath.Dir(file), "..", "kafkaref"))
	if err == nil {
		*classpath = cp // resolved once
	}
	return cp, err
}

// kafkaClasspath is resolveClasspath for a case that starts a Kafka of
// its own.
func kafkaClasspath(t *testing.T) string {
	t.Helper()
	cp, err := resolveClasspath()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func start(m *testing.M, work string) int {
	cp, err := resolveClasspath()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kafka, err := kafkaref.Start(filepath.Join(work, "kafka"), cp, shared)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := kafka.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "diff: stop kafka:", err)
		}
	}()

	skein, err := startSkein(work)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := skein.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "diff: stop skein:", err)
		}
	}()

	kafkaAddr, skeinAddr = kafka.Addr(), skein.Addr().String()
	if kafkaVersions, err = apiVersions(kafkaAddr); err != nil {
		fmt.Fprintln(os.Stderr, "diff: kafka:", err)
		return 1
	}
	if skeinVersions, err = apiVersions(skeinAddr); err != nil {
		fmt.Fprintln(os.Stderr, "diff: skein:", err)
		return 1
	}
	fmt.Printf("diff: kafka %s on %s, skein on %s\n", kafkaref.Version, kafkaAddr, skeinAddr)

	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		// Every listed difference must still be one: a stale entry
		// would excuse a regression later.
		for i, d := range differences {
			if !used[i] {
				fmt.Fprintf(os.Stderr, "diff: differences.go lists a difference no case saw: %+v\n", d)
				code = 1
			}
		}
	}
	return code
}

// startSkein starts a node in this process with the shared settings, on
// loopback ports the kernel picks, logging to work/skein.log.
func startSkein(work string) (*node.Node, error) {
	env := []string{
		configs.EnvName("data.dir") + "=" + filepath.Join(work, "skein"),
		configs.EnvName("listen") + "=127.0.0.1:0",
		configs.EnvName("advertise") + "=127.0.0.1:0",
		configs.EnvName("admin.listen") + "=127.0.0.1:0",
		// Kafka's server.properties must set these two (kafkaref): set
		// here too, they show with the same source.
		configs.EnvName("node.id") + "=1",
		configs.EnvName("process.roles") + "=broker,controller",
	}
	for _, k := range slices.Sorted(maps.Keys(shared)) {
		env = append(env, configs.EnvName(k)+"="+shared[k])
	}
	cfg, err := configs.Load(nil, env)
	if err != nil {
		return nil, fmt.Errorf("diff: skein config: %w", err)
	}
	logFile, err := os.Create(filepath.Join(work, "skein.log"))
	if err != nil {
		return nil, err
	}
	n, err := node.Start(cfg, zerolog.New(logFile).Level(zerolog.InfoLevel).With().Timestamp().Logger())
	if err != nil {
		return nil, fmt.Errorf("diff: start skein: %w", err)
	}
	return n, nil
}

// apiVersions reads the versions the broker at addr advertises.
func apiVersions(addr string) (map[int16][2]int16, error) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "skein-diff", "1"
	o := send(addr, req)
	if o.err != nil {
		return nil, o.err
	}
	resp := o.resp.(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != 0 {
		return nil, fmt.Errorf("ApiVersions: error code %d", resp.ErrorCode)
	}
	vs := map[int16][2]int16{}
	for _, k := range resp.ApiKeys {
		vs[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return vs, nil
}
