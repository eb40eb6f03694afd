// Package console tests the web console (package console, /ui on each
// node's admin listener) in a real browser: headless Chromium driven by
// chromedp against three `skein node` processes on 127.0.13.11-13 built
// by TestMain. Without Chromium the tests skip, and are recorded for
// `make test`'s list of tests not run; on CI (CI set) they fail.
// Screenshots of each page go to $SKEIN_ARTIFACTS_DIR when it is set.
package console

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/internal/needroot"
)

// The cluster's fixed layout: node i (1, 2, 3) listens on 127.0.13.1i.
// Each node has a PLAINTEXT listener, the inter-broker one, which the
// test's own clients use too (User:ANONYMOUS, a super user), and a
// SASL_PLAINTEXT one with PLAIN users, which makes the admin listener
// (and so the console) ask for a user.
const (
	numNodes    = 3
	kafkaPort   = 9092
	clusterPort = 9093
	saslPort    = 9094
	adminPort   = 9644
)

// The PLAIN users: admin is a super user, alice is not.
const (
	adminUser, adminPassword = "admin", "admin-secret"
	aliceUser, alicePassword = "alice", "alice-secret"
)

// readyTimeout bounds a node's start: under -race on two busy cores a
// node can take many seconds.
const readyTimeout = 60 * time.Second

// skeinBin is the skein binary TestMain built.
var skeinBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests builds cmd/skein once (race-instrumented when the tests are,
// so that a race in a node fails the test), runs the tests and removes
// the binary. SKEIN_BIN names a binary to use instead.
func runTests(m *testing.M) int {
	if skeinBin = os.Getenv("SKEIN_BIN"); skeinBin != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "skein-console-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	skeinBin = filepath.Join(dir, "skein")
	args := []string{"build", "-o", skeinBin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/skeinlog/skein/cmd/skein")
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(args, " "), err, out)
		return 1
	}
	return m.Run()
}

func host(i int) string { return fmt.Sprintf("127.0.13.1%d", i) }

func kafkaAddr(i int) string { return fmt.Sprintf("%s:%d", host(i), kafkaPort) }

func adminURL(i int) string { return fmt.Sprintf("http://%s:%d", host(i), adminPort) }

// cluster is numNodes `skein node` processes with chaos.enable on, the
// StandardAuthorizer and super.users User:admin and User:ANONYMOUS.
type cluster struct {
	t     testing.TB
	nodes [numNodes + 1]*exec.Cmd // by node id; [0] unused
	logs  [numNodes + 1]string
}

// startCluster starts the nodes, waits for each to be ready, and stops
// them at the end of the test, failing it if a node exited on its own or
// its race detector reported.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	c := &cluster{t: t}
	dir := t.TempDir()
	var voters []string
	for i := 1; i <= numNodes; i++ {
		voters = append(voters, fmt.Sprintf("%d@%s:%d", i, host(i), clusterPort))
	}
	exited := make([]chan struct{}, numNodes+1)
	for i := 1; i <= numNodes; i++ {
		props := filepath.Join(dir, fmt.Sprintf("node%d.properties", i))
		c.logs[i] = filepath.Join(dir, fmt.Sprintf("node%d.log", i))
		conf := strings.NewReplacer(
			"$ID", fmt.Sprint(i), "$DIR", filepath.Join(dir, fmt.Sprintf("node%d", i)), "$HOST", host(i),
			"$KAFKA", fmt.Sprint(kafkaPort), "$SASL", fmt.Sprint(saslPort), "$ADMIN", fmt.Sprint(adminPort),
			"$CLUSTER", fmt.Sprint(clusterPort), "$VOTERS", strings.Join(voters, ","),
			"$SUPER", adminUser, "$SUPASS", adminPassword, "$USER", aliceUser, "$PASS", alicePassword,
		).Replace(`node.id=$ID
data.dir=$DIR
listeners=PLAINTEXT://$HOST:$KAFKA,SASL_PLAINTEXT://$HOST:$SASL
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
inter.broker.listener.name=PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$SUPER" password="$SUPASS" user_$SUPER="$SUPASS" user_$USER="$PASS";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:$SUPER;User:ANONYMOUS
admin.listen=$HOST:$ADMIN
controller.quorum.voters=$VOTERS
cluster.listen=$HOST:$CLUSTER
chaos.enable=true
group.initial.rebalance.delay.ms=0
num.partitions=3
default.replication.factor=3
offsets.topic.num.partitions=3
transaction.state.log.num.partitions=3
`)
		if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		logf, err := os.Create(c.logs[i])
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(skeinBin, "node", "--config", props, "--log-format", "json")
		// The developer's SKEIN_* settings must not reach the nodes.
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "SKEIN_") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		logf.Close() // the child has its own descriptor
		c.nodes[i] = cmd
		exited[i] = make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited[i])
		}()
	}
	// NB: registered after t.TempDir, so it runs before the directory is
	// removed, with no node still writing to it.
	t.Cleanup(func() {
		for i := 1; i <= numNodes; i++ {
			select {
			case <-exited[i]:
				t.Errorf("node %d exited on its own (%v)", i, c.nodes[i].ProcessState)
			default:
				c.nodes[i].Process.Kill()
				<-exited[i]
			}
			if race := raceReport(c.logs[i]); race != "" {
				t.Errorf("node %d: the race detector reported:\n%s", i, race)
			}
		}
		if t.Failed() {
			for i := 1; i <= numNodes; i++ {
				t.Logf("node %d, the end of its log:\n%s", i, logTail(c.logs[i], 30))
			}
		}
	})
	deadline := time.Now().Add(readyTimeout)
	for i := 1; i <= numNodes; i++ {
		for {
			resp, err := http.Get(adminURL(i) + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-exited[i]:
				t.Fatalf("node %d exited while starting; its log ends:\n%s", i, logTail(c.logs[i], 30))
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d not ready within %v; its log ends:\n%s", i, readyTimeout, logTail(c.logs[i], 30))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// client returns a franz-go client of the PLAINTEXT listeners (a super
// user), closed at the end of the test.
func (c *cluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	var seeds []string
	for i := 1; i <= numNodes; i++ {
		seeds = append(seeds, kafkaAddr(i))
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// chromiumPath finds Chromium: SKEIN_CHROMIUM, or the Debian package's
// binary, or chromium / chromium-browser / google-chrome on the PATH.
// Without it the test cannot run: on CI (which installs it, .ci/run) that
// fails the test; elsewhere it is skipped and recorded for `make test`'s
// list of tests not run, as internal/needroot does for root.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SKEIN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	reason := "needs Chromium (Debian: apt-get install chromium; or set SKEIN_CHROMIUM) for the console's browser tests"
	if os.Getenv("CI") != "" {
		t.Fatal(reason + "; CI installs it (.ci/run)")
	}
	if dir := os.Getenv(needroot.DirEnv); dir != "" && os.MkdirAll(dir, 0o755) == nil {
		os.WriteFile(filepath.Join(dir, regexp.MustCompile(`[^A-Za-z0-9_.-]`).ReplaceAllString(t.Name(), "_")),
			[]byte(t.Name()+": "+reason+"\n"), 0o644)
	}
	t.Skip(reason)
	return ""
}

// browser starts headless Chromium and returns the context of its
// first tab, logged in as user (tab); it is closed at the end of the
// test.
func browser(t *testing.T, user, password string) context.Context {
	t.Helper()
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	login(t, ctx, user, password)
	return ctx
}

// tab opens another tab of the browser, logged in as user, closed at the
// end of the test.
func tab(t *testing.T, browser context.Context, user, password string) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	login(t, ctx, user, password)
	return ctx
}

// login makes the tab send user's HTTP Basic credentials with every
// request, as the browser does once its login prompt (the admin
// listener's WWW-Authenticate) is answered.
func login(t *testing.T, tab context.Context, user, password string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	err := chromedp.Do(tab, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders,
			network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Basic " + auth}})
		return err
	}))
	if err != nil {
		t.Fatalf("starting Chromium, or a tab of it: %v", err)
	}
}

// do runs actions in the tab within d, failing the test with what it
// was waiting for and the text the page shows.
func do(t *testing.T, tab context.Context, d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, d)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v; the page shows:\n%s", what, err, pageText(tab))
	}
}

// waitFor polls the JavaScript expression in the tab until it is truthy,
// for at most d, failing the test otherwise.
func waitFor(t *testing.T, tab context.Context, d time.Duration, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, d+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
		chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(d)))
	if err != nil {
		t.Fatalf("%s: %v; the page shows:\n%s", what, err, pageText(tab))
	}
}

// eval returns the value of a JavaScript expression in the tab.
func eval[T any](t *testing.T, tab context.Context, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// click clicks the element sel selects, failing the test if there is
// none.
func click(t *testing.T, tab context.Context, sel string) {
	t.Helper()
	if !eval[bool](t, tab, fmt.Sprintf(`(() => { const b = document.querySelector(%q); b && b.click(); return !!b; })()`, sel)) {
		t.Fatalf("no %s to click; the page shows:\n%s", sel, pageText(tab))
	}
}

// pageText is the text of the page's main element, for failure messages.
func pageText(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("main") ? document.querySelector("main").innerText : ""`))
	if err != nil {
		return err.Error()
	}
	if len(text) > 3000 {
		text = text[:3000] + " …"
	}
	return text
}

// screenshot saves the whole page as console-name.png in
// $SKEIN_ARTIFACTS_DIR, or else in the test's temporary directory.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 20*time.Second)
	defer cancel()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	dir := os.Getenv("SKEIN_ARTIFACTS_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "console-"+name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d KB)", path, len(buf)/1024)
}

// logTail returns the last n lines of a node's log.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) > 600 {
			line = line[:600] + " …"
		}
		if lines = append(lines, line); len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// raceReport returns the first data race a node's log reports, or "".
func raceReport(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	i := strings.Index(string(b), "WARNING: DATA RACE")
	if i < 0 {
		return ""
	}
	report := string(b[i:])
	if end := strings.Index(report, "=================="); end >= 0 {
		report = report[:end]
	}
	if len(report) > 8000 {
		report = report[:8000] + "\n…"
	}
	return report
}

// get reads an admin URL of node i as user, for the test's own checks.
func get(i int, path, user, password string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, adminURL(i)+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.SetBasicAuth(user, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// pollUntil asks cond until it holds, for at most pageTimeout; then the
// test fails with what cond last said.
func pollUntil(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(pageTimeout)
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, pageTimeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
