package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pageTimeout bounds the wait for a page's content: pages poll every 1-3
// s, and a race-built node on two busy cores answers slowly.
const pageTimeout = 30 * time.Second

// TestConsole drives the console in headless Chromium against one
// 3-node cluster, logged in as the super user admin with chaos on: each
// page renders its real content, the fault buttons work, and each page is
// kept as a screenshot. The subtests share the cluster and run in order.
func TestConsole(t *testing.T) {
	chromiumPath(t) // before the cluster: without a browser there is nothing to do
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := c.client(kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"orders", "payments", "orders-audit"} {
		if _, err := adm.CreateTopic(ctx, 3, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		r := &kgo.Record{Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, `{"order": %d}`, i),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("console-test")}}}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce to orders-%d: %v", r.Partition, err)
		}
	}
	admin := browser(t, adminUser, adminPassword)
	ui := adminURL(1) + "/ui/"

	t.Run("cluster", func(t *testing.T) {
		do(t, admin, pageTimeout, "the cluster page lists the three nodes, the quorum and the link buttons",
			chromedp.Navigate(ui+"#/cluster"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-node="3"]`)),
			chromedp.WaitVisible(chromedp.CSS(`button[data-fault="cut"]`)))
		waitFor(t, admin, pageTimeout, "the quorum's three voters", `document.querySelectorAll("section td").length > 0 &&
			[...document.querySelectorAll("section")].some(s => s.textContent.includes("voter"))`)
		screenshot(t, admin, "cluster")
	})

	t.Run("topics", func(t *testing.T) {
		done := make(chan struct{})
		defer close(done)
		go func() { // traffic, for the rates
			for {
				select {
				case <-done:
					return
				case <-time.After(50 * time.Millisecond):
				}
				cl.Produce(ctx, &kgo.Record{Partition: 1, Value: []byte(`{"order": "more"}`)}, nil)
			}
		}()
		do(t, admin, pageTimeout, "the topics page lists orders",
			chromedp.Navigate(ui+"#/topics"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-topic="orders"]`)))
		// Two polls make a rate: the sparklines have a point then.
		waitFor(t, admin, pageTimeout, "orders' bytes in per second above 0, drawn",
			`Number((document.querySelector('tr[data-topic="orders"] .rate') || {dataset: {}}).dataset.rate) > 0 &&
			[...document.querySelectorAll('tr[data-topic="orders"] polyline')].some(p => p.getAttribute("points").includes(" "))`)
		screenshot(t, admin, "topics")
		do(t, admin, pageTimeout, "the topic page shows orders' partitions and configs",
			chromedp.Navigate(ui+"#/topics/orders"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-partition="2"]`)))
		waitFor(t, admin, pageTimeout, "orders' configs", `document.body.textContent.includes("cleanup.policy")`)
		screenshot(t, admin, "topic")
	})

	// A key lookup finds the record produced with that key, in the
	// partition the default partitioner chose, and says which.
	t.Run("messages", func(t *testing.T) {
		keyed := c.client(kgo.DefaultProduceTopic("orders")) // the default partitioner, as any client's
		r := &kgo.Record{Key: []byte("customer-42"), Value: []byte(`{"customer": 42, "total": "12.50"}`),
			Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("abc123")}}}
		if err := keyed.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		do(t, admin, pageTimeout, "the message browser offers orders",
			chromedp.Navigate(ui+"#/messages/orders"),
			chromedp.WaitReady(chromedp.CSS(`#msg-topic option[value="orders"]`)))
		eval[bool](t, admin, `(() => { const m = document.querySelector("#msg-mode"); m.value = "key";
			m.dispatchEvent(new Event("change")); return true; })()`)
		do(t, admin, pageTimeout, "a lookup of key customer-42",
			chromedp.SendKeys(chromedp.CSS("#msg-key"), "customer-42"),
			chromedp.Click(chromedp.CSS("#msg-go")),
			chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#msg-result tr[data-offset="%d"]`, r.Offset))))
		waitFor(t, admin, pageTimeout, fmt.Sprintf("the lookup names partition %d and shows the record", r.Partition),
			fmt.Sprintf(`document.querySelector("#msg-result .lookup").dataset.partition === "%d" &&
				document.querySelector('#msg-result tr[data-offset="%d"][data-record-partition="%[1]d"]').textContent.includes("customer-42") &&
				document.querySelector("#msg-result").textContent.includes("abc123")`, r.Partition, r.Offset))
		eval[bool](t, admin, `(document.querySelector('button[data-decode="json"]').click(), true)`)
		screenshot(t, admin, "messages")
	})

	// The lag of a group that consumes slowly falls on its page between
	// two of the page's readings.
	t.Run("groups", func(t *testing.T) {
		const records = 600
		for i := range records {
			cl.Produce(ctx, &kgo.Record{Topic: "payments", Partition: int32(i % 3), Value: fmt.Appendf(nil, "payment %d", i)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		consumer := c.client(kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("payments"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		consumed := make(chan struct{})
		cctx, stop := context.WithCancel(ctx)
		defer func() {
			stop()
			<-consumed
		}()
		go func() { // slowly: 10 records, a commit, a pause
			defer close(consumed)
			for cctx.Err() == nil {
				fs := consumer.PollRecords(cctx, 10)
				if rs := fs.Records(); len(rs) > 0 {
					consumer.CommitRecords(cctx, rs...)
				}
				select {
				case <-cctx.Done():
				case <-time.After(250 * time.Millisecond):
				}
			}
		}()
		do(t, admin, pageTimeout, "the groups page lists billing",
			chromedp.Navigate(ui+"#/groups"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-group="billing"]`)))
		screenshot(t, admin, "groups")
		do(t, admin, pageTimeout, "billing's page shows its lag",
			chromedp.Navigate(ui+"#/groups/billing"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-partition="payments-0"]`)))
		const lag = `Number((document.querySelector("#group-lag") || {dataset: {}}).dataset.lag)`
		waitFor(t, admin, pageTimeout, "a lag above 0", lag+` > 0`)
		first := eval[string](t, admin, `document.querySelector("#group-lag").dataset.lag`)
		waitFor(t, admin, pageTimeout, "the lag below the first reading, "+first,
			lag+` < `+first)
		screenshot(t, admin, "group")
	})

	t.Run("transactions", func(t *testing.T) {
		txn := c.client(kgo.TransactionalID("tx-orders"), kgo.DefaultProduceTopic("orders"))
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Key: []byte("t1"), Value: []byte("in a transaction")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		do(t, admin, pageTimeout, "the transactions page lists tx-orders and orders' producers",
			chromedp.Navigate(ui+"#/transactions/orders"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-txn="tx-orders"]`)),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-producer]`)))
		waitFor(t, admin, pageTimeout, "tx-orders committed", `document.querySelector('tr[data-txn="tx-orders"]').textContent.includes("CompleteCommit")`)
		screenshot(t, admin, "transactions")
	})

	t.Run("extensions", func(t *testing.T) {
		body := `{"name": "audit-orders", "kind": "audit", "settings": {"source.topics": "orders", "target.topic": "orders-audit"}}`
		req, _ := http.NewRequest(http.MethodPost, adminURL(1)+"/v1/extensions", bytes.NewBufferString(body))
		req.SetBasicAuth(adminUser, adminPassword)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /v1/extensions: %s", resp.Status)
		}
		do(t, admin, pageTimeout, "the extensions page shows audit-orders and its partitions on node 1",
			chromedp.Navigate(ui+"#/extensions"),
			chromedp.WaitVisible(chromedp.CSS(`[data-extension="audit-orders"] tbody tr td .mark`)))
		waitFor(t, admin, pageTimeout, "audit-orders running", `document.querySelector('[data-extension="audit-orders"] tbody').textContent.includes("running")`)
		screenshot(t, admin, "extensions")
	})

	// The actor tree shows orders-0's partition actor; its panic button,
	// confirmed, panics it: its restart count goes up in the tree and the
	// journal shows its failure.
	t.Run("actors", func(t *testing.T) {
		const actor = "node/1/partitions/orders-0"
		row := `li[data-actor="` + actor + `"] > .row`
		do(t, admin, pageTimeout, "the actor tree shows "+actor,
			chromedp.Navigate(ui+"#/actors"),
			chromedp.WaitVisible(chromedp.CSS(row+` .restarts`)))
		before := eval[string](t, admin, fmt.Sprintf(`document.querySelector(%q).dataset.restarts`, row+" .restarts"))
		if _, err := strconv.Atoi(before); err != nil {
			t.Fatalf("restarts %q: %v", before, err)
		}
		// NB: a click by the page's own script, not at the button's
		// place: the tree may move under a mouse between two polls.
		click(t, admin, row+` button[data-fault="panic"]`)
		do(t, admin, pageTimeout, "the confirmation of a panic of "+actor,
			chromedp.WaitVisible(chromedp.CSS(`dialog.confirm button.ok`)))
		what := eval[string](t, admin, `document.querySelector("dialog.confirm p").textContent`)
		if !bytes.Contains([]byte(what), []byte("Panic "+actor+" once")) {
			t.Errorf("the confirmation says %q: want what it will do", what)
		}
		click(t, admin, `dialog.confirm button.ok`)
		// The fault fires at the next message the actor handles: appends
		// bring it some.
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(200 * time.Millisecond):
				}
				cl.Produce(ctx, &kgo.Record{Partition: 0, Value: []byte("nudge")}, nil)
			}
		}()
		waitFor(t, admin, pageTimeout, "the tree counts a restart of "+actor+" and the journal shows its failure",
			fmt.Sprintf(`(() => {
				const r = document.querySelector(%q);
				return r && Number(r.dataset.restarts) > %s &&
					document.querySelector('#journal div[data-type="failed"][data-actor=%q]') !== null;
			})()`, row+" .restarts", before, actor))
		screenshot(t, admin, "actors")
	})

	// alice is no super user: the console shows her no fault button, and
	// the admin API refuses her a fault anyway.
	t.Run("not a super user", func(t *testing.T) {
		alice := tab(t, admin, aliceUser, alicePassword)
		do(t, alice, pageTimeout, "alice sees the actor tree",
			chromedp.Navigate(ui+"#/actors"),
			chromedp.WaitVisible(chromedp.CSS(`li[data-actor="node/1/partitions/orders-0"]`)))
		waitFor(t, alice, pageTimeout, "the nav names alice", `document.querySelector("#who").textContent.includes("alice")`)
		if n := eval[int](t, alice, `document.querySelectorAll("button[data-fault]").length`); n != 0 {
			t.Errorf("alice sees %d fault buttons on the actor tree; want none", n)
		}
		do(t, alice, pageTimeout, "alice sees the cluster", chromedp.Navigate(ui+"#/cluster"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-node="3"]`)))
		if n := eval[int](t, alice, `document.querySelectorAll("button[data-fault]").length`); n != 0 {
			t.Errorf("alice sees %d fault buttons on the cluster page; want none", n)
		}
	})

	// The cut button on node 2's row, confirmed, cuts the link between
	// nodes 1 and 2 both ways (node 2's own admin API lists its side);
	// heal ends both. Last: the cluster is not itself for a moment.
	t.Run("link faults", func(t *testing.T) {
		do(t, admin, pageTimeout, "the cluster page", chromedp.Navigate(ui+"#/cluster"),
			chromedp.WaitVisible(chromedp.CSS(`tr[data-node="2"] button[data-fault="cut"]`)))
		click(t, admin, `tr[data-node="2"] button[data-fault="cut"]`)
		do(t, admin, pageTimeout, "the cut's confirmation", chromedp.WaitVisible(chromedp.CSS(`dialog.confirm button.ok`)))
		if what := eval[string](t, admin, `document.querySelector("dialog.confirm p").textContent`); !strings.Contains(what, "both ways") {
			t.Errorf("the confirmation says %q: want it to say the link is cut both ways", what)
		}
		click(t, admin, `dialog.confirm button.ok`)
		waitFor(t, admin, pageTimeout, "node 2's row marks the cut link", `document.querySelector('tr[data-node="2"]').textContent.includes("link cut")`)
		node2Links := func() string {
			code, body, err := get(2, "/v1/links", adminUser, adminPassword)
			if err != nil || code != http.StatusOK {
				t.Fatalf("node 2's /v1/links: %d %s %v", code, body, err)
			}
			return body
		}
		pollUntil(t, "node 2's side of the link cut", func() (bool, string) {
			body := node2Links()
			return strings.Contains(body, `"peer": 1`) && strings.Contains(body, `"cut": true`), body
		})
		click(t, admin, `tr[data-node="2"] button[data-fault="heal"]`)
		do(t, admin, pageTimeout, "the heal's confirmation", chromedp.WaitVisible(chromedp.CSS(`dialog.confirm button.ok`)))
		click(t, admin, `dialog.confirm button.ok`)
		waitFor(t, admin, pageTimeout, "node 2's link healed", `!document.querySelector('tr[data-node="2"]').textContent.includes("link cut")`)
		pollUntil(t, "node 2's side of the link healed", func() (bool, string) {
			body := node2Links()
			return !strings.Contains(body, `"peer"`), body
		})
	})
}
