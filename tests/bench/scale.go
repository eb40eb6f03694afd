package main

// Scale mode (-scale): many partitions on one node under a bounded number of
// open files, and produce cost as the number of partitions written at once
// grows. See README.md, "Scale benchmark".

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// scaleFlags are the flags of scale mode, registered on the command line.
type scaleFlags struct {
	on                                   *bool
	nofile, partitions, hot, hotRecords  *int
	value, seriesRecords                 *int
	series, durability                   *string
	settle, serveTimeout, produceTimeout *time.Duration
}

func newScaleFlags() scaleFlags {
	return scaleFlags{
		on:             flag.Bool("scale", false, "run the scale benchmark instead of the broker benchmark"),
		nofile:         flag.Int("nofile", 20000, "-scale: open-file limit (soft and hard) of the Skein node, set with prlimit"),
		partitions:     flag.Int("scale-partitions", 10000, "-scale: partitions on the node in all; 0 skips that run"),
		hot:            flag.Int("scale-hot", 1000, "-scale: partitions of the topic produced to after the restart; the rest are in a second topic"),
		hotRecords:     flag.Int("scale-hot-records", 200, "-scale: records per partition produced to the hot topic"),
		value:          flag.Int("scale-value", 1024, "-scale: value size in bytes"),
		series:         flag.String("scale-series", "1,100,1000", "-scale: partition counts written at once, each against a fresh node; empty for none"),
		seriesRecords:  flag.Int("scale-series-records", 200_000, "-scale: records per case of the series"),
		durability:     flag.String("scale-durability", "fsync", "-scale: durability of the node (fsync or replicated)"),
		settle:         flag.Duration("scale-settle", 10*time.Second, "-scale: idle time before reading the node's memory and descriptors"),
		serveTimeout:   flag.Duration("scale-serve-timeout", 5*time.Minute, "-scale: bound on waiting for every partition to serve, after creating the topics and after the restart"),
		produceTimeout: flag.Duration("scale-produce-timeout", 2*time.Minute, "-scale: bound on each produce phase"),
	}
}

// config checks the flags and returns the run's configuration, bin, work,
// keep and linger still to be set.
func (f scaleFlags) config() (scaleConfig, error) {
	c := scaleConfig{
		nofile: *f.nofile, partitions: *f.partitions, hot: *f.hot, hotRecords: *f.hotRecords,
		value: *f.value, seriesRecords: *f.seriesRecords, durability: *f.durability,
		settle: *f.settle, serveTimeout: *f.serveTimeout, produceTimeout: *f.produceTimeout,
	}
	if !*f.on {
		return c, nil
	}
	if *f.series != "" {
		var err error
		if c.series, err = ints(*f.series); err != nil {
			return c, fmt.Errorf("-scale-series: %w", err)
		}
	}
	switch {
	case c.partitions < 0:
		return c, errors.New("-scale-partitions must be at least 0 (0: no many-partitions run)")
	case c.hot < 1, c.hotRecords < 1, c.value < 1, c.seriesRecords < 1:
		return c, errors.New("-scale-hot, -scale-hot-records, -scale-value and -scale-series-records must be at least 1")
	case c.partitions > 0 && c.hot > c.partitions:
		return c, errors.New("-scale-hot must be at most -scale-partitions")
	}
	return c, nil
}

// scaleConfig is one run of scale mode.
type scaleConfig struct {
	bin, work string // the skein binary; the directory of data and logs
	keep      bool   // keep data and logs
	linger    time.Duration

	nofile                               int // 0: the limit this process has
	partitions, hot, hotRecords          int
	value                                int
	series                               []int
	seriesRecords                        int
	durability                           string
	settle, serveTimeout, produceTimeout time.Duration
}

// scaleReport collects what a scale run measured and what went wrong.
type scaleReport struct {
	figures  [][2]string  // label, value: the many-partitions run
	produce  []produceRun // the hot produce, then the series
	failures []string     // records not acknowledged, timeouts, dead nodes
	logs     []string     // logs of the nodes that had failures
}

func (r *scaleReport) add(label, format string, args ...any) {
	r.figures = append(r.figures, [2]string{label, fmt.Sprintf(format, args...)})
}

func (r *scaleReport) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "FAIL: %s\n", msg)
	r.failures = append(r.failures, msg)
}

// produceRun is one produce phase of scale mode.
type produceRun struct {
	name string
	w    workload
	res  result
	err  error
	fds  int // the node's open descriptors at the end
}

// runScale runs scale mode and writes its tables to out. It returns an
// error if any record was not acknowledged, a phase timed out or a node
// failed; the figures themselves are never judged.
func runScale(out io.Writer, c scaleConfig) error {
	var r scaleReport
	if c.partitions > 0 {
		c.manyPartitions(&r)
	}
	for _, p := range c.series {
		c.seriesCase(&r, p)
	}
	r.write(out, c)
	if len(r.failures) > 0 {
		return fmt.Errorf("scale: FAIL: %s", strings.Join(r.failures, "; "))
	}
	return nil
}

const (
	hotTopic  = "scale-hot"
	idleTopic = "scale-idle"
)

// topics are the topics of the many-partitions run and their partitions.
func (c scaleConfig) topics() map[string]int {
	ts := map[string]int{hotTopic: c.hot}
	if c.partitions > c.hot {
		ts[idleTopic] = c.partitions - c.hot
	}
	return ts
}

// manyPartitions creates c.partitions partitions on one node, restarts it
// and produces to the hot topic, measuring time, memory and descriptors.
func (c scaleConfig) manyPartitions(r *scaleReport) {
	dir := filepath.Join(c.work, "many")
	t := skeinTarget(c.bin, c.durability, c.nofile)
	stderrf("scale: %d partitions: starting the node\n", c.partitions)
	b, err := t.start(dir, "")
	if err != nil {
		r.fail("starting the node: %v", err)
		return
	}
	defer func() {
		if b != nil {
			b.kill()
		}
		if len(r.failures) > 0 {
			r.logs = append(r.logs, filepath.Join(dir, "broker.log"))
		}
	}()
	if lim, err := procNofile(b.cmd.Process.Pid); err == nil {
		r.add("open-file limit of the node (soft/hard)", "%s", lim)
	}
	base, ok := c.idle(r, b, "before topics", idleSample{})
	if !ok {
		return
	}

	// Create: one CreateTopics per topic (the hot one first), then wait
	// until ListOffsets answers for every partition.
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(c.serveTimeout))
	for _, name := range []string{hotTopic, idleTopic} {
		n := c.topics()[name]
		if n == 0 {
			continue
		}
		t0 := time.Now()
		if err := createTopic(ctx, b, name, n); err != nil {
			r.fail("CreateTopics %s (%d partitions): %v", name, n, err)
			r.add(fmt.Sprintf("CreateTopics %s (%d partitions)", name, n), "failed after %s s", secs(time.Since(t0)))
		} else {
			r.add(fmt.Sprintf("CreateTopics %s (%d partitions) answered", name, n), "%s s", secs(time.Since(t0)))
		}
	}
	cancel()
	c.served(r, b, "create", start)
	if _, ok := c.idle(r, b, "after create", base); !ok {
		return
	}

	// Restart on the same data directory. A stop that fails has still
	// ended the process (stop kills it at worst): restart all the same.
	t0 := time.Now()
	err = b.stop()
	b = nil
	if err != nil {
		r.fail("stopping the node: %v", err)
		r.add("stop (SIGTERM to exit)", "%s s, failed: %v", secs(time.Since(t0)), err)
	} else {
		r.add("graceful stop (SIGTERM to exit)", "%s s", secs(time.Since(t0)))
	}
	stderrf("scale: restarting the node\n")
	if b, err = t.start(dir, ""); err != nil {
		r.fail("restarting the node: %v", err)
		return
	}
	r.add("restart: Kafka listener announced (from process start)", "%s s", secs(time.Since(b.started)))
	c.served(r, b, "restart (from process start)", b.started)
	if _, ok := c.idle(r, b, "after restart", base); !ok {
		return
	}

	// Produce to every partition of the hot topic at once.
	w := workload{partitions: c.hot, valueSize: c.value, records: c.hot * c.hotRecords,
		linger: c.linger, topic: hotTopic, keepGoing: true}
	name := fmt.Sprintf("%d of %d partitions, after restart", c.hot, c.partitions)
	run := c.produceRun(r, b, name, w)
	if run.err == nil {
		if err := checkEndOffsets(b, w); err != nil {
			r.fail("%s: %v", name, err)
		} else {
			r.add(fmt.Sprintf("%s: end offsets", hotTopic), "%d records in each partition, as produced", c.hotRecords)
		}
	}
	err = b.stop()
	b = nil
	if err != nil {
		r.fail("stopping the node: %v", err)
	}
	if len(r.failures) == 0 && !c.keep {
		os.RemoveAll(dir)
	}
}

// served waits until every partition of the many-partitions run serves, at
// most c.serveTimeout after since, and records how long that took from
// since under the label what.
func (c scaleConfig) served(r *scaleReport, b *broker, what string, since time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), since.Add(c.serveTimeout))
	defer cancel()
	label := what + ": every partition serves"
	if err := awaitServing(ctx, b, c.topics()); err != nil {
		r.fail("%s: %v", label, err)
		r.add(label, "no: %v", err)
		return
	}
	r.add(label, "%s s", secs(time.Since(since)))
}

// seriesCase produces c.seriesRecords records to a topic of p partitions,
// all written at once, on a fresh node.
func (c scaleConfig) seriesCase(r *scaleReport, p int) {
	w := workload{partitions: p, valueSize: c.value, records: c.seriesRecords, linger: c.linger, keepGoing: true}
	dir := filepath.Join(c.work, "series-"+w.slug())
	stderrf("scale: %s\n", w)
	produced := false // then produceRun has reported any failure
	err := withBroker(skeinTarget(c.bin, c.durability, c.nofile), dir, "", func(b *broker) error {
		ctx, cancel := context.WithTimeout(context.Background(), c.serveTimeout)
		defer cancel()
		if err := createTopic(ctx, b, w.topicName(), p); err != nil {
			return err
		}
		if err := awaitServing(ctx, b, map[string]int{w.topicName(): p}); err != nil {
			return err
		}
		produced = true
		return c.produceRun(r, b, fmt.Sprintf("%d partition%s", p, plural(p)), w).err
	})
	if err != nil {
		if !produced {
			r.fail("%s: %v", w, err)
		}
		r.logs = append(r.logs, filepath.Join(dir, "broker.log"))
	} else if !c.keep {
		os.RemoveAll(dir)
	}
}

// produceRun runs one produce phase of w against b under the produce
// timeout and records it.
func (c scaleConfig) produceRun(r *scaleReport, b *broker, name string, w workload) produceRun {
	stderrf("scale: producing %d records to %s ... ", w.records, name)
	ctx, cancel := context.WithTimeout(context.Background(), c.produceTimeout)
	res, err := produce(ctx, b, w)
	cancel()
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("timed out after %v: %w", c.produceTimeout, err)
	}
	run := produceRun{name: name, w: w, res: res, err: err}
	run.fds, _ = procFDs(b.cmd.Process.Pid)
	if err != nil {
		stderrf("failed\n")
		r.fail("produce to %s: %d of %d records acknowledged (%d failed, %d unanswered, %d never sent): %v",
			name, res.acked, w.records, res.failed, res.unanswered, res.unsent, err)
	} else {
		stderrf("%.0f rec/s, %.1f MB/s (load %s)\n", res.produce.recordsPerSec(), res.produce.mbPerSec(), loadAverage())
	}
	r.produce = append(r.produce, run)
	return run
}

// idleSample is the node's memory at rest.
type idleSample struct {
	rss  int64   // resident set, bytes
	heap float64 // Go heap in use, bytes; 0 if /metrics did not say
}

// idle waits c.settle, then records the node's resident memory, open
// descriptors, Go heap and goroutines under the label when; with a base
// sample (not zero), also the memory per partition above it. It returns
// the sample, and false if the node is gone.
func (c scaleConfig) idle(r *scaleReport, b *broker, when string, base idleSample) (idleSample, bool) {
	var s idleSample
	select {
	case <-b.done:
		r.fail("the node exited %s: %v", when, b.err)
		return s, false
	case <-time.After(c.settle):
	}
	pid := b.cmd.Process.Pid
	// NB: memory first: scraping /metrics allocates in the node.
	var err error
	if s.rss, err = procRSS(pid); err != nil {
		r.fail("reading the node's RSS %s: %v", when, err)
		return s, false
	}
	fds, _ := procFDs(pid)
	m := adminMetrics(skeinAdmin(b.line))
	s.heap = m["go_memstats_heap_inuse_bytes"]
	perPartition := func(now, before float64) string {
		if base == (idleSample{}) {
			return ""
		}
		return fmt.Sprintf(" (%.1f KiB per partition above the node without topics)", (now-before)/1024/float64(c.partitions))
	}
	r.add("node RSS, idle, "+when, "%.1f MiB%s", float64(s.rss)/(1<<20), perPartition(float64(s.rss), float64(base.rss)))
	if s.heap > 0 {
		r.add("Go heap in use, idle, "+when, "%.1f MiB%s", s.heap/(1<<20), perPartition(s.heap, base.heap))
	}
	if g, ok := m["go_goroutines"]; ok {
		r.add("goroutines, idle, "+when, "%.0f", g)
	}
	r.add("open descriptors, idle, "+when, "%d", fds)
	if n, ok := m["skein_open_files"]; ok {
		r.add("files open in the node's descriptor cache / its cap, "+when, "%.0f / %.0f", n, m["skein_open_files_max"])
	}
	if n, ok := m["skein_partitions_failed"]; ok {
		r.add("partitions failed (skein_partitions_failed), "+when, "%.0f", n)
	}
	return s, true
}

// awaitServing polls ListOffsets (latest) until every partition of topics
// answers without error, ctx ends or the node exits.
func awaitServing(ctx context.Context, b *broker, topics map[string]int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := make([]string, 0, len(topics))
	want := 0
	for t, n := range topics {
		names = append(names, t)
		want += n
	}
	for {
		n, why := serving(ctx, adm, names)
		if n == want {
			return nil
		}
		select {
		case <-b.done:
			return fmt.Errorf("the node exited (%v) with %d of %d partitions serving (%s)", b.err, n, want, why)
		case <-ctx.Done():
			return fmt.Errorf("timed out: %d of %d partitions serve (%s)", n, want, why)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// serving counts the partitions of topics whose latest offset ListOffsets
// answers without error and says what the others answered.
func serving(ctx context.Context, adm *kadm.Client, topics []string) (int, string) {
	offs, err := adm.ListEndOffsets(ctx, topics...)
	n, errs := 0, map[string]int{}
	if err != nil {
		errs[err.Error()]++
	}
	offs.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Err != nil:
			errs[o.Err.Error()]++
		case o.Partition >= 0:
			n++
		}
	})
	var why []string
	for e, k := range errs {
		why = append(why, fmt.Sprintf("%d× %s", k, e))
	}
	sort.Strings(why)
	if len(why) == 0 {
		return n, "no errors"
	}
	return n, strings.Join(why, "; ")
}

// checkEndOffsets checks that every partition of w's topic ends where w's
// produce phase left it.
func checkEndOffsets(b *broker, w workload) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, w.topicName())
	if err != nil {
		return err
	}
	var bad []string
	for p := range w.partitions {
		want := int64(w.records / w.partitions)
		if p < w.records%w.partitions {
			want++
		}
		o, ok := offs.Lookup(w.topicName(), int32(p))
		if !ok || o.Err != nil || o.Offset != want {
			bad = append(bad, fmt.Sprintf("%d: %d (%v)", p, o.Offset, o.Err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d partitions end elsewhere than produced; first: %s", len(bad), bad[0])
	}
	return nil
}

// adminMetrics scrapes the node's /metrics and returns its unlabelled
// samples; nothing if it cannot.
func adminMetrics(addr string) map[string]float64 {
	m := map[string]float64{}
	if addr == "" {
		return m
	}
	hc := http.Client{Timeout: 10 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[f[0]] = v
		}
	}
	return m
}

// write prints the run's tables and verdict as Markdown.
func (r *scaleReport) write(out io.Writer, c scaleConfig) {
	if c.partitions > 0 {
		fmt.Fprintf(out, "### %d partitions on one node (%s %d, %s %d; %s, durability %s)\n\n",
			c.partitions, hotTopic, c.hot, idleTopic, c.partitions-c.hot, c.limit(), c.durability)
		fmt.Fprintf(out, "| measure | value |\n| --- | --- |\n")
		for _, f := range r.figures {
			fmt.Fprintf(out, "| %s | %s |\n", f[0], f[1])
		}
	}
	fmt.Fprintf(out, "\n### Produce (%s values, acks=all, idempotent, linger %v, %s, durability %s)\n\n",
		sizeName(c.value), c.linger, c.limit(), c.durability)
	produceTable(out, r.produce)
	fmt.Fprintf(out, "- load average at end: %s\n\n", loadAverage())
	if len(r.failures) == 0 {
		fmt.Fprintf(out, "**PASS**: every record acknowledged, no phase timed out.\n\n")
		return
	}
	fmt.Fprintf(out, "**FAIL**:\n\n")
	for _, f := range r.failures {
		fmt.Fprintf(out, "- %s\n", f)
	}
	fmt.Fprintln(out)
	for _, l := range r.logs {
		fmt.Fprintf(out, "Warnings and errors in %s:\n\n```\n", l)
		for _, d := range logDigest(l, 12) {
			fmt.Fprintln(out, d)
		}
		fmt.Fprintf(out, "```\n\n")
	}
}

// limit says what open-file limit the nodes run under.
func (c scaleConfig) limit() string {
	if c.nofile <= 0 {
		return "open-file limit inherited"
	}
	return fmt.Sprintf("nofile %d", c.nofile)
}

// produceTable writes one column per produce phase.
func produceTable(out io.Writer, runs []produceRun) {
	if len(runs) == 0 {
		return
	}
	head := []string{"partitions written at once"}
	for _, run := range runs {
		head = append(head, run.name)
	}
	fmt.Fprintf(out, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	cpuPerRecord := func(p phase) float64 {
		return float64(p.brokerCPU.Microseconds()) / float64(max(1, p.records))
	}
	// Rates are of the records acknowledged (all of them unless the phase
	// failed): with none, a rate says nothing.
	rows := []struct {
		label string
		rate  bool
		value func(produceRun) string
	}{
		{"records acknowledged", false, func(run produceRun) string {
			s := fmt.Sprintf("%d of %d", run.res.acked, run.w.records)
			if run.err != nil {
				s += " FAIL"
			}
			return s
		}},
		{"records/s", true, func(run produceRun) string { return fmt.Sprintf("%.0f", run.res.produce.recordsPerSec()) }},
		{"MB/s (values)", true, func(run produceRun) string { return fmt.Sprintf("%.1f", run.res.produce.mbPerSec()) }},
		{"broker CPU-s/GB", true, func(run produceRun) string { return fmt.Sprintf("%.2f", run.res.produce.brokerCPUPerGB()) }},
		{"broker CPU-µs per record", true, func(run produceRun) string { return fmt.Sprintf("%.2f", cpuPerRecord(run.res.produce)) }},
		{"client CPU-s/GB", true, func(run produceRun) string { return fmt.Sprintf("%.2f", run.res.produce.clientCPUPerGB()) }},
		{"records per batch", true, func(run produceRun) string {
			return fmt.Sprintf("%.1f", float64(run.res.acked)/float64(max(1, run.res.batches)))
		}},
		{"p50 / p99 ms per request", false, func(run produceRun) string {
			return fmt.Sprintf("%.1f / %.1f", ms(run.res.requestLatency.p50), ms(run.res.requestLatency.p99))
		}},
		{"open descriptors at the end", false, func(run produceRun) string { return strconv.Itoa(run.fds) }},
	}
	for _, row := range rows {
		cells := []string{row.label}
		for _, run := range runs {
			if row.rate && run.res.acked == 0 {
				cells = append(cells, "-")
			} else {
				cells = append(cells, row.value(run))
			}
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}

// logDigest groups the lines of a JSON node log above info by level and
// message: count, then the first such line (cut to 400 bytes), at most max
// groups, most frequent first, after a line that counts them.
func logDigest(path string, max int) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	type group struct {
		key   string
		n     int
		first string
	}
	groups := map[string]*group{}
	lines, kept := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Level   string `json:"level"`
			Message string `json:"message"`
		}
		lines++
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			// Not JSON (a panic's trace, the http package's log): group
			// the lines that differ only in numbers.
			l.Level, l.Message = "?", digits.ReplaceAllString(sc.Text(), "N")
		}
		switch l.Level {
		case "info", "debug", "trace":
			continue
		}
		key := l.Level + " " + l.Message
		g := groups[key]
		if g == nil {
			g = &group{key: key, first: sc.Text()}
			groups[key] = g
		}
		g.n++
		kept++
	}
	var gs []*group
	for _, g := range groups {
		gs = append(gs, g)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].n > gs[j].n || gs[i].n == gs[j].n && gs[i].key < gs[j].key })
	out := []string{fmt.Sprintf("%d of the log's %d lines, by level and message:", kept, lines)}
	if err := sc.Err(); err != nil {
		out[0] = fmt.Sprintf("%d of the first %d lines (then %v), by level and message:", kept, lines, err)
	}
	for i, g := range gs {
		if i == max {
			out = append(out, fmt.Sprintf("(%d more kinds)", len(gs)-max))
			break
		}
		line := g.first
		if len(line) > 400 {
			line = line[:400] + "..."
		}
		out = append(out, fmt.Sprintf("%d× %s", g.n, line))
	}
	return out
}

var digits = regexp.MustCompile(`[0-9]+`)

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) }

func stderrf(format string, args ...any) { fmt.Fprintf(os.Stderr, format, args...) }
