package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// percentiles summarises a set of latencies.
type percentiles struct {
	n        int
	p50, p99 time.Duration
}

// percentilesOf sorts d in place and takes its nearest-rank percentiles.
func percentilesOf(d []time.Duration) percentiles {
	if len(d) == 0 {
		return percentiles{}
	}
	slices.Sort(d)
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(d))+0.5) - 1
		return d[max(0, min(i, len(d)-1))]
	}
	return percentiles{n: len(d), p50: rank(0.50), p99: rank(0.99)}
}

// row is one line of a workload's table: a label and how to read its value
// from a target's results R, and whether a ratio of Skein's to a
// reference's makes sense for it.
type row[R any] struct {
	label string
	value func(*R) float64
	unit  string // printf verb for the value
	ratio bool
}

var rows = []row[result]{
	{"produce records/s", func(r *result) float64 { return r.produce.recordsPerSec() }, "%.0f", true},
	{"produce MB/s (values)", func(r *result) float64 { return r.produce.mbPerSec() }, "%.1f", true},
	{"produce p50 ms, per record", func(r *result) float64 { return ms(r.recordLatency.p50) }, "%.2f", false},
	{"produce p99 ms, per record", func(r *result) float64 { return ms(r.recordLatency.p99) }, "%.2f", false},
	{"produce p50 ms, per request", func(r *result) float64 { return ms(r.requestLatency.p50) }, "%.2f", false},
	{"produce p99 ms, per request", func(r *result) float64 { return ms(r.requestLatency.p99) }, "%.2f", false},
	{"records per batch", func(r *result) float64 { return float64(r.produce.records) / float64(max(1, r.batches)) }, "%.0f", false},
	{"produce broker CPU-s/GB", func(r *result) float64 { return r.produce.brokerCPUPerGB() }, "%.2f", true},
	{"produce client CPU-s/GB", func(r *result) float64 { return r.produce.clientCPUPerGB() }, "%.2f", false},
	{"consume records/s", func(r *result) float64 { return r.consume.recordsPerSec() }, "%.0f", true},
	{"consume MB/s (values)", func(r *result) float64 { return r.consume.mbPerSec() }, "%.1f", true},
	{"consume broker CPU-s/GB", func(r *result) float64 { return r.consume.brokerCPUPerGB() }, "%.2f", true},
	{"consume client CPU-s/GB", func(r *result) float64 { return r.consume.clientCPUPerGB() }, "%.2f", false},
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// references are the brokers Skein is compared with, in the order of their
// ratio columns.
var references = []string{"kfake", "kafka"}

// ratio is a column of Skein's figures over a reference's.
type ratio struct{ skein, ref string }

// ratioPairs lists, reference by reference, the Skein targets among names
// to compare with it, where both ran.
func ratioPairs(names []string, ran func(string) bool) []ratio {
	var ratios []ratio
	for _, ref := range references {
		if !ran(ref) {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, "skein-") && ran(n) {
				ratios = append(ratios, ratio{n, ref})
			}
		}
	}
	return ratios
}

// table writes w's results as a Markdown table (writeTable), its heading
// naming the security protocol the clients used, then, over SASL_SSL, the
// TLS each broker negotiated.
func table(out io.Writer, w workload, names []string, results map[string]*result) {
	writeTable(out, fmt.Sprintf("%s (%d records, acks=all, linger %v, %s)", w, w.records, w.linger, w.protocolName()), names, results, rows)
	var negotiated []string
	for _, n := range names {
		if r := results[n]; r != nil && r.tls != "" {
			negotiated = append(negotiated, n+" "+r.tls)
		}
	}
	if len(negotiated) > 0 {
		fmt.Fprintf(out, "TLS with Go's client: %s.\n\n", strings.Join(negotiated, "; "))
	}
}

// writeTable writes a Markdown table titled title: one column per target
// in run order, then one ratio column per Skein target and reference
// (kfake, Apache Kafka) that ran. A target that failed shows "failed".
func writeTable[R any](out io.Writer, title string, names []string, results map[string]*R, rows []row[R]) {
	ratios := ratioPairs(names, func(n string) bool { return results[n] != nil })
	fmt.Fprintf(out, "### %s\n\n", title)
	head := append([]string{""}, names...)
	for _, p := range ratios {
		head = append(head, strings.TrimPrefix(p.skein, "skein-")+"/"+p.ref)
	}
	fmt.Fprintf(out, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(out, "|%s\n", strings.Repeat(" --- |", len(head)))
	for _, r := range rows {
		cells := []string{r.label}
		for _, n := range names {
			if res := results[n]; res != nil {
				cells = append(cells, fmt.Sprintf(r.unit, r.value(res)))
			} else {
				cells = append(cells, "failed")
			}
		}
		for _, p := range ratios {
			if r.ratio {
				cells = append(cells, fmt.Sprintf("%.2f", r.value(results[p.skein])/r.value(results[p.ref])))
			} else {
				cells = append(cells, "")
			}
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(out)
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
