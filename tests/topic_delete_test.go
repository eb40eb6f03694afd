package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/configs"
)

// deleteSeeds is how many seeds TestDeletedTopicStaysDeletedAcrossSIGKILL
// runs: SKEIN_TEST_DELETE_SEEDS, or 3.
func deleteSeeds(t *testing.T) int {
	if s := os.Getenv("SKEIN_TEST_DELETE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("SKEIN_TEST_DELETE_SEEDS=%q: want a positive number", s)
		}
		return n
	}
	return 3
}

// TestDeletedTopicStaysDeletedAcrossSIGKILL: a `skein node` is killed
// (SIGKILL) at a random moment of a topic's deletion, from before the
// deletion reaches the partitions to after their directories are gone;
// started again, it does not list the topic, and a topic created under the
// same name has none of the old records (issue 27: 48 of 50 directories
// stayed, and the new topic served the old records). Each seed is a
// moment; SKEIN_TEST_DELETE_SEEDS runs more.
func TestDeletedTopicStaysDeletedAcrossSIGKILL(t *testing.T) {
	node := newChildNode(t)
	node.start()
	const partitions = 300
	base := uint64(time.Now().UnixNano())
	for i := range deleteSeeds(t) {
		seed := base + uint64(i)
		r := rand.New(rand.NewPCG(seed, seed))
		ok := t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			topic := fmt.Sprintf("gone%d", i)
			createAndFill(t, node.addr, topic, partitions, partitions)
			adm := kadm.NewClient(newClientFor(t, node.addr))
			ctx := ctxFor(t)
			if _, err := adm.DeleteTopic(ctx, topic); err != nil {
				t.Fatal(err)
			}
			// The moment of the kill, not a wait for anything: the
			// deletion of 300 partitions takes about this long.
			time.Sleep(time.Duration(r.IntN(1500)) * time.Millisecond)
			node.kill()
			node.start()
			checkRecreatedEmpty(t, node, topic, partitions)
		})
		if !ok {
			t.Fatalf("failed with seed %d", seed)
		}
	}
}

// TestSIGTERMDuringBigDelete: SIGTERM while a node deletes a topic of
// 100,000 partitions, 2,000 of them with records, stops it within the
// CLI's 10 s, with status 0; started again, the topic stays deleted, a
// topic of the same name has none of its records, and every directory of
// the old topic goes (issue 27: a stop overran its deadline, and 4,717 of
// 5,000 directories stayed and were served again).
func TestSIGTERMDuringBigDelete(t *testing.T) {
	node := newChildNode(t)
	node.start()
	const partitions, filled = 100_000, 2000
	createAndFill(t, node.addr, "big", partitions, filled)
	adm := kadm.NewClient(newClientFor(t, node.addr))
	if _, err := adm.DeleteTopic(ctxFor(t), "big"); err != nil {
		t.Fatal(err)
	}
	took := node.terminate(10 * time.Second)
	t.Logf("exited %v after SIGTERM", took)
	node.start()
	checkRecreatedEmpty(t, node, "big", partitions)
	// The new topic's directories are the only ones left: the old ones,
	// renamed for deletion, are removed in the background.
	eventually(t, "the deleted topic's directories removed", func() bool {
		names, err := os.ReadDir(node.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range names {
			if strings.HasSuffix(e.Name(), "-delete") {
				return false
			}
		}
		return true
	})
}

// createAndFill creates topic and produces a record to each of its first
// filled partitions.
func createAndFill(t *testing.T, addr, topic string, partitions, filled int32) {
	t.Helper()
	ctx := ctxFor(t)
	adm := kadm.NewClient(newClientFor(t, addr))
	adm.SetTimeoutMillis(60_000)
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	cl := newClientFor(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, filled)
	for p := range filled {
		recs[p] = &kgo.Record{Partition: p, Value: []byte("old")}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// checkRecreatedEmpty checks that the node does not list topic, creates it
// again, and checks that every partition is empty.
func checkRecreatedEmpty(t *testing.T, node *childNode, topic string, partitions int32) {
	t.Helper()
	ctx := ctxFor(t)
	adm := kadm.NewClient(newClientFor(t, node.addr))
	adm.SetTimeoutMillis(60_000)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) {
		t.Fatalf("%s, deleted before the restart, is listed after it", topic)
	}
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatalf("create %s again: %v", topic, err)
	}
	var ends kadm.ListedOffsets
	eventually(t, topic+"'s partitions to answer ListOffsets", func() bool {
		ends, err = adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false
		}
		loaded := 0
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err == nil {
				loaded++
			}
		})
		return loaded == int(partitions)
	})
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Errorf("%s/%d, created again, ends at offset %d: the deleted topic's records are served", topic, o.Partition, o.Offset)
		}
	})
}

// TestSIGTERMDuringBigCreate: SIGTERM just after a topic of 100,000
// partitions was created, while most still open their logs, stops the node
// within the CLI's 10 s with status 0. (The node waited for every partition
// to open, 13 s for 10,000 on a loaded machine; package partition's
// TestStopDoesNotWaitForPartitionsStillToOpen is the test that fails
// without the fix.)
func TestSIGTERMDuringBigCreate(t *testing.T) {
	node := newChildNode(t)
	node.start()
	adm := kadm.NewClient(newClientFor(t, node.addr))
	adm.SetTimeoutMillis(1000) // answered while the partitions still open
	if _, err := adm.CreateTopic(ctxFor(t), 100_000, 1, nil, "big"); err != nil {
		t.Fatal(err)
	}
	took := node.terminate(10 * time.Second)
	t.Logf("exited %v after SIGTERM", took)
}

// TestStartLeavesForeignDirectories: at start a node deletes the partition
// directories its metadata does not place on it, but a directory that
// merely has a partition's name and holds no log is not its own to delete.
func TestStartLeavesForeignDirectories(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	foreign := filepath.Join(dataDir, "backup-1", "notes.txt")
	stray := filepath.Join(dataDir, "gone-0")
	for path, content := range map[string]string{foreign: "mine", filepath.Join(stray, "checkpoint"): ""} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := startBroker(t, func(c *configs.Node) { c.DataDir = dataDir })
	// The node sweeps before it hosts anything: once a new topic takes a
	// record, the sweep is over.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl := newClientFor(t, b.node.Addr().String(), kgo.DefaultProduceTopic("after"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(foreign); err != nil || string(b) != "mine" {
		t.Errorf("a directory holding no log was touched: %q, %v", b, err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("the log directory of a topic the cluster does not have is still there: %v", err)
	}
}
