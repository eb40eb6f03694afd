package tests

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestThousandPartitionsUnderALowDescriptorLimit: a `skein node` child
// process whose open-file limit is 512 (set by prlimit, soft and hard)
// hosts a topic of 1,000 partitions, three files each at the least, and
// franz-go produces to all of them at once (idempotent, acks=all): every
// record is acknowledged and reads back, before and after a graceful
// restart, and the node logs no storage failure, because its descriptor
// cache keeps it under the limit.
func TestThousandPartitionsUnderALowDescriptorLimit(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Fatalf("prlimit (util-linux) is needed: %v", err)
	}
	node := newChildNode(t)
	node.wrap = []string{prlimit, "--nofile=512:512", "--"}
	node.start()
	// A thousand partitions take longer than ctxFor's minute on a slow
	// disk: each is a directory and files made durable one by one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const partitions = 1000
	adm := kadm.NewClient(newClientFor(t, node.addr))
	start := time.Now()
	mustCreate(t, ctx, adm, "many", partitions, nil)
	t.Logf("created in %v", time.Since(start))

	p := newStreamProducer(t, ctx, node.addr, "many", partitions)
	p.waitAcked(t, 5*partitions)
	produced := p.finish(t, ctx)
	t.Logf("produced in %v", time.Since(start))
	p.mu.Lock()
	acks, failed := p.acks, p.failed
	p.mu.Unlock()
	checkLog(t, ctx, node.addr, "many", partitions, produced, acks, failed)

	t.Logf("read in %v", time.Since(start))
	node.terminate(30 * time.Second)
	t.Logf("stopped in %v", time.Since(start))
	node.start()
	t.Logf("started in %v", time.Since(start))
	checkLog(t, ctx, node.addr, "many", partitions, produced, acks, failed)

	logs, err := os.ReadFile(node.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"too many open files", "partition storage failed", "accept failing"} {
		if n := bytes.Count(logs, []byte(bad)); n > 0 {
			t.Errorf("the node logged %q %d times", bad, n)
		}
	}
}
