package main

// The extension benchmark (-extensions): how fast, and at what CPU cost, one
// Skein node copies a topic with an extension running inside it (route,
// mirror) against the same copy done by a consume-produce process outside
// it (tests/bench/copier). See README.md, "Extensions: route and mirror
// against a consume-produce process (issue 12)".

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/tests/procstat"
)

type extensionFlags struct {
	on         *bool
	records    *int
	values     *string
	partitions *int
}

func newExtensionFlags() extensionFlags {
	return extensionFlags{
		on:         flag.Bool("extensions", false, "run the extension benchmark (extensions.go) instead: route and mirror against a consume-produce process"),
		records:    flag.Int("extension-records", 500_000, "with -extensions: records produced to the source topic and copied, per run"),
		values:     flag.String("extension-values", "1024,100", "with -extensions: comma-separated value sizes in bytes"),
		partitions: flag.Int("extension-partitions", 6, "with -extensions: partitions of the source topic (and of the copies)"),
	}
}

// extensionConfig is one run of the extension benchmark.
type extensionConfig struct {
	skein, copier string // binaries
	work          string
	keep          bool
	records       int
	partitions    int
	values        []int
	linger        time.Duration
	runTimeout    time.Duration // bound on one copier's run of one value size
	// profileDir, if set, gets a CPU profile of each node (the whole run:
	// produce and copy), <copier>-<workload>.pprof.
	profileDir string
}

// The copiers, in run order, each against a fresh node: the two extension
// kinds and the process outside the broker.
var copiers = []string{"route", "mirror", "external"}

const (
	sourceTopic     = "in"
	copyPollEvery   = 20 * time.Millisecond
	caughtUpTimeout = 30 * time.Second
)

// copyTarget is the topic copier writes.
func copyTarget(copier string) string {
	switch copier {
	case "route":
		return "out"
	case "mirror":
		return "mirror." + sourceTopic
	}
	return "out2"
}

// copyResult is one copier's run: the produce phase that filled the source
// topic, then the copy. copy.clientCPU is the copier process's (zero for an
// extension, which runs in the broker).
type copyResult struct {
	produce, copy phase
	// first is when the target's end offsets first showed a record
	// copied, from the same start as copy.elapsed: the copier's start-up
	// (an extension's actors loading their position and, for the mirror,
	// creating its target), to within copyPollEvery.
	first time.Duration
}

func (r copyResult) totalCPUPerGB() float64 {
	return (r.copy.brokerCPU + r.copy.clientCPU).Seconds() / (float64(r.copy.bytes) / 1e9)
}

func runExtensionBench(out io.Writer, c extensionConfig) error {
	fmt.Fprintf(out, "One node, `durability: fsync`, topic `%s` of %d partitions filled by the broker benchmark's "+
		"produce phase, then copied: route (partitioning=source, default.topic=out, no rules), mirror (to mirror.in), "+
		"external (tests/bench/copier: kgo, groupless, idempotent acks=all, linger %v); a fresh node for each.\n\n",
		sourceTopic, c.partitions, c.linger)
	var failed []error
	for _, size := range c.values {
		w := workload{partitions: c.partitions, valueSize: size, records: c.records, linger: c.linger, topic: sourceTopic}
		results := map[string]*copyResult{}
		for _, name := range copiers {
			dir := filepath.Join(c.work, "extensions-"+w.slug(), name)
			stderrf("extensions: %s: %s ... ", w, name)
			ctx, cancel := context.WithTimeout(context.Background(), c.runTimeout)
			profile := ""
			if c.profileDir != "" {
				profile = filepath.Join(c.profileDir, "extensions-"+name+"-"+w.slug()+".pprof")
			}
			res, err := c.runCopy(ctx, name, w, dir, profile)
			cancel()
			if err != nil {
				stderrf("failed: %v\n", err)
				failed = append(failed, fmt.Errorf("%s, %s: %w", w, name, err))
				continue // keep the directory: it holds the logs
			}
			stderrf("produce %.0f rec/s, copy %.0f rec/s %.1f MB/s (load %s)\n",
				res.produce.recordsPerSec(), res.copy.recordsPerSec(), res.copy.mbPerSec(), loadAverage())
			results[name] = &res
			if !c.keep {
				os.RemoveAll(dir)
			}
		}
		copyTable(out, w, results)
	}
	fmt.Fprintf(out, "- load average at end: %s\n", loadAverage())
	return errors.Join(failed...)
}

// copyRows are the rows of copyTable; ratio marks those with an
// extension/external ratio.
var copyRows = []struct {
	label string
	value func(copyResult) float64
	unit  string
	ratio bool
}{
	{"produce to `in` records/s (baseline)", func(r copyResult) float64 { return r.produce.recordsPerSec() }, "%.0f", false},
	{"produce broker CPU-s/GB (baseline)", func(r copyResult) float64 { return r.produce.brokerCPUPerGB() }, "%.2f", false},
	{"copy s", func(r copyResult) float64 { return r.copy.elapsed.Seconds() }, "%.2f", false},
	{"first record copied after s", func(r copyResult) float64 { return r.first.Seconds() }, "%.2f", false},
	{"copy records/s", func(r copyResult) float64 { return r.copy.recordsPerSec() }, "%.0f", true},
	{"copy MB/s (values)", func(r copyResult) float64 { return r.copy.mbPerSec() }, "%.1f", true},
	{"copy broker CPU-s/GB", func(r copyResult) float64 { return r.copy.brokerCPUPerGB() }, "%.2f", true},
	{"copy copier CPU-s/GB", func(r copyResult) float64 { return r.copy.clientCPUPerGB() }, "%.2f", false},
	{"copy total CPU-s/GB", func(r copyResult) float64 { return r.totalCPUPerGB() }, "%.2f", true},
}

// copyTable writes one value size's results: a column per copier, then
// route/external and mirror/external.
func copyTable(out io.Writer, w workload, results map[string]*copyResult) {
	fmt.Fprintf(out, "### %s (%d records)\n\n", w, w.records)
	head := append([]string{""}, copiers...)
	head = append(head, "route/external", "mirror/external")
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	ext := results["external"]
	for _, r := range copyRows {
		cells := []string{r.label}
		for _, name := range copiers {
			switch res := results[name]; {
			case res == nil:
				cells = append(cells, "failed")
			case name != "external" && strings.Contains(r.label, "copier CPU"):
				cells = append(cells, "-") // runs in the broker
			default:
				cells = append(cells, fmt.Sprintf(r.unit, r.value(*res)))
			}
		}
		for _, name := range copiers[:2] {
			if res := results[name]; r.ratio && res != nil && ext != nil {
				cells = append(cells, fmt.Sprintf("%.2f", r.value(*res)/r.value(*ext)))
			} else {
				cells = append(cells, "")
			}
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}

// runCopy starts a fresh node, fills the source topic with w's produce
// phase, then copies it with copier and measures the copy: from creating
// the extension instance (or telling the copier process to go) until the
// target's end offsets add up to w.records. It then checks that the copy is
// exact: each target partition ends where its source partition does, once
// the copier has nothing left to write.
func (c extensionConfig) runCopy(ctx context.Context, copier string, w workload, dir, profile string) (copyResult, error) {
	var res copyResult
	target := copyTarget(copier)
	err := withBroker(skeinTarget(c.skein, "fsync", 0), dir, profile, func(b *broker) error {
		admin := skeinAdmin(b.line)
		if admin == "" {
			return fmt.Errorf("no admin.listen in %q", b.line)
		}
		topics := []string{sourceTopic}
		if copier != "mirror" { // the mirror creates its target
			topics = append(topics, target)
		}
		for _, t := range topics {
			if err := createTopic(ctx, b, t, w.partitions); err != nil {
				return err
			}
		}
		pr, err := produce(ctx, b, w)
		if err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		res.produce = pr.produce

		// NB: kgo keeps what a sharded request such as ListOffsets learnt
		// of a topic's partitions for MetadataMinAge (5 s by default), an
		// unknown topic too: the mirror's target, polled before the mirror
		// created it, would look missing for up to 5 s after.
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.MetadataMinAge(copyPollEvery))
		if err != nil {
			return err
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)

		var (
			proc  *copierProc
			start time.Time
			pcpu0 time.Duration
		)
		if copier == "external" {
			if proc, err = startCopier(ctx, c.copier, dir, b.addr, w); err != nil {
				return err
			}
			defer proc.stop()
		}
		cpu0, err := b.cpu()
		if err != nil {
			return err
		}
		if proc != nil {
			if pcpu0, err = procstat.CPU(proc.cmd.Process.Pid); err != nil {
				return err
			}
			start = time.Now()
			if _, err := io.WriteString(proc.stdin, "go\n"); err != nil {
				return fmt.Errorf("starting the copier: %w", err)
			}
		} else {
			start = time.Now()
			if err := createExtension(ctx, admin, copier, copier); err != nil {
				return err
			}
		}
		if res.first, err = awaitCopied(ctx, adm, b, proc, target, start, int64(w.records)); err != nil {
			return err
		}
		elapsed := time.Since(start)
		cpu1, err := b.cpu()
		if err != nil {
			return err
		}
		res.copy = phase{records: w.records, bytes: int64(w.records) * int64(w.valueSize), elapsed: elapsed, brokerCPU: cpu1 - cpu0}
		if proc != nil {
			pcpu1, err := procstat.CPU(proc.cmd.Process.Pid)
			if err != nil {
				return err
			}
			res.copy.clientCPU = pcpu1 - pcpu0
		}

		// Off the clock: the copier is done writing (the extension's
		// position is committed at the source's end, the process said so
		// and exited), and every partition was copied exactly once.
		if proc != nil {
			if err := proc.finish(w.records); err != nil {
				return err
			}
		} else if err := awaitCaughtUp(ctx, adm, "skein-extension-"+copier, w.partitions); err != nil {
			return err
		}
		return checkCopy(ctx, adm, target, w.partitions)
	})
	return res, err
}

// createExtension creates the instance name of kind through the node's
// admin API, copying topic "in".
func createExtension(ctx context.Context, admin, name, kind string) error {
	settings := map[string]string{"source.topics": sourceTopic}
	if kind == "route" {
		settings["default.topic"], settings["partitioning"] = copyTarget("route"), "source"
	}
	var body strings.Builder
	fmt.Fprintf(&body, `{"name": %q, "kind": %q, "settings": {`, name, kind)
	sep := ""
	for k, v := range settings {
		fmt.Fprintf(&body, "%s%q: %q", sep, k, v)
		sep = ", "
	}
	body.WriteString("}}")
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+admin+"/v1/extensions", strings.NewReader(body.String()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("POST /v1/extensions: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST /v1/extensions %s: %s %s", body.String(), resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// awaitCopied polls topic's end offsets every copyPollEvery until they add
// up to want, ctx ends, or the node (or the copier process, if any) exits.
// It returns how long after start the first record was seen.
func awaitCopied(ctx context.Context, adm *kadm.Client, b *broker, proc *copierProc, topic string, start time.Time, want int64) (first time.Duration, err error) {
	var procDone <-chan struct{}
	if proc != nil {
		procDone = proc.done
	}
	tick := time.NewTicker(copyPollEvery)
	defer tick.Stop()
	var sum int64
	for {
		sum = 0
		if offs, err := adm.ListEndOffsets(ctx, topic); err == nil { // the mirror's target may not exist yet
			offs.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					sum += o.Offset
				}
			})
		}
		if sum > 0 && first == 0 {
			first = time.Since(start)
		}
		if sum >= want {
			return first, nil
		}
		select {
		case <-ctx.Done():
			return first, fmt.Errorf("%d of %d records copied to %s: %w", sum, want, topic, ctx.Err())
		case <-b.done:
			return first, fmt.Errorf("the node exited (%v) with %d of %d records copied to %s", b.err, sum, want, topic)
		case <-procDone:
			return first, fmt.Errorf("the copier exited (%v) with %d of %d records copied; see %s", proc.err, sum, want, proc.log.Name())
		case <-tick.C:
		}
	}
}

// awaitCaughtUp waits until group's committed offsets on the source topic
// are its end offsets: the extension has nothing left to write.
func awaitCaughtUp(ctx context.Context, adm *kadm.Client, group string, partitions int) error {
	ctx, cancel := context.WithTimeout(ctx, caughtUpTimeout)
	defer cancel()
	for {
		ends, err1 := adm.ListEndOffsets(ctx, sourceTopic)
		offs, err2 := adm.FetchOffsets(ctx, group)
		if errors.Join(err1, err2) == nil {
			n := 0
			ends.Each(func(e kadm.ListedOffset) {
				if o, ok := offs.Lookup(sourceTopic, e.Partition); ok && e.Err == nil && o.At == e.Offset {
					n++
				}
			})
			if n == partitions {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("group %s did not commit the end of %s: %w", group, sourceTopic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkCopy checks that each partition of topic ends where the same
// partition of the source topic does: every record copied, none twice.
func checkCopy(ctx context.Context, adm *kadm.Client, topic string, partitions int) error {
	src, err := adm.ListEndOffsets(ctx, sourceTopic)
	if err != nil {
		return err
	}
	dst, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	var bad []string
	for p := range int32(partitions) {
		s, ok1 := src.Lookup(sourceTopic, p)
		d, ok2 := dst.Lookup(topic, p)
		if !ok1 || !ok2 || s.Err != nil || d.Err != nil || s.Offset != d.Offset {
			bad = append(bad, fmt.Sprintf("%d: %s has %d (%v), %s %d (%v)", p, sourceTopic, s.Offset, s.Err, topic, d.Offset, d.Err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the copy differs from the source: %s", strings.Join(bad, "; "))
	}
	return nil
}

// copierProc is a running tests/bench/copier process.
type copierProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its stdout, line by line
	log   *os.File    // its stderr and stdout
	done  chan struct{}
	err   error // the exit status, set before done closes
}

// startCopier starts the copier binary at bin to copy w's topic to out2
// on addr, and waits until it is ready.
func startCopier(ctx context.Context, bin, dir, addr string, w workload) (*copierProc, error) {
	logf, err := os.Create(filepath.Join(dir, "copier.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-brokers", addr, "-from", sourceTopic, "-to", copyTarget("external"),
		"-partitions", strconv.Itoa(w.partitions), "-records", strconv.Itoa(w.records), "-linger", w.linger.String())
	cmd.Stderr = logf
	p := &copierProc{cmd: cmd, log: logf, lines: make(chan string, 4), done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err == nil {
		p.stdin, err = cmd.StdinPipe()
	}
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.expect(ctx, "ready", startTimeout); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// expect waits for the line want from the copier.
func (p *copierProc) expect(ctx context.Context, want string, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		select {
		case l := <-p.lines:
			if l == want {
				return nil
			}
		case <-p.done:
			return fmt.Errorf("the copier exited (%v) before saying %q; see %s", p.err, want, p.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return fmt.Errorf("the copier did not say %q within %v; see %s", want, within, p.log.Name())
		}
	}
}

// finish waits for the copier to say it copied n records, ends its stdin
// and checks that it exits cleanly.
func (p *copierProc) finish(n int) error {
	if err := p.expect(context.Background(), fmt.Sprintf("copied %d", n), caughtUpTimeout); err != nil {
		return err
	}
	p.stdin.Close()
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("the copier: %w; see %s", p.err, p.log.Name())
		}
		return nil
	case <-time.After(caughtUpTimeout):
		return fmt.Errorf("the copier did not exit within %v of its stdin's end", caughtUpTimeout)
	}
}

// stop ends the copier (its stdin, then SIGKILL after a grace period) if it
// still runs, and closes its log.
func (p *copierProc) stop() {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.log.Close()
}

// runExtensions runs the extension benchmark from its flags, building the
// skein binary (unless given) and the copier into work.
func runExtensions(out io.Writer, f extensionFlags, skeinBin, work, profileDir string, keep bool, linger, runTimeout time.Duration) error {
	if *f.records < 1 || *f.partitions < 1 {
		return errors.New("-extension-records and -extension-partitions must be at least 1")
	}
	values, err := ints(*f.values)
	if err != nil {
		return fmt.Errorf("-extension-values: %w", err)
	}
	if skeinBin == "" {
		if skeinBin, err = buildSkein(work); err != nil {
			return err
		}
	}
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			return err
		}
	}
	copier := filepath.Join(work, "copier")
	if err := build(copier, "./tests/bench/copier"); err != nil {
		return err
	}
	header(out, "Extension benchmark")
	return runExtensionBench(out, extensionConfig{
		skein: skeinBin, copier: copier, work: work, keep: keep,
		records: *f.records, partitions: *f.partitions, values: values,
		linger: linger, runTimeout: runTimeout, profileDir: profileDir,
	})
}
