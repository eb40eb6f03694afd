package main

// The recovery benchmark (-recovery): for each fault kind, `skein chaos
// run`'s scenario of that name against a fresh local cluster, with Skein's
// default timeouts and with tuned ones; each fault's time to recover (the
// fault applied → every partition led and taking an acks=all produce
// again) is collected, and p50, p99 and max reported with the run's
// verdict.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skeinlog/skein/chaos"
)

type recoveryFlags struct {
	on       *bool
	kinds    *string
	duration *time.Duration
	runs     *int
}

func newRecoveryFlags() recoveryFlags {
	return recoveryFlags{
		on:       flag.Bool("recovery", false, "run the recovery benchmark (recovery.go) instead"),
		kinds:    flag.String("recovery-kinds", "leader-kill,bounce,zombie,isolate-leader,torn-tail,power-loss,disk-full", "with -recovery: comma-separated scenarios of skein chaos run"),
		duration: flag.Duration("recovery-duration", 90*time.Second, "with -recovery: faults applied per run"),
		runs:     flag.Int("recovery-runs", 1, "with -recovery: runs per scenario and timeout setting"),
	}
}

// timeoutSettings are the node settings of each column: Skein's defaults
// (broker sessions of 9 s, Kafka's), and timeouts tuned for fast failover.
var timeoutSettings = []struct {
	name     string
	settings []string
}{
	{"default", nil},
	{"tuned", []string{"broker.session.timeout.ms=3000", "broker.heartbeat.interval.ms=500", "replica.lag.time.max.ms=5000"}},
}

func runRecovery(out io.Writer, f recoveryFlags, bin, work string) error {
	fmt.Fprintf(out, "Each run: `skein chaos run KIND --duration %v` on three local nodes (reassign: four); "+
		"tuned = %s.\n\n", *f.duration, strings.Join(timeoutSettings[1].settings, ", "))
	fmt.Fprintln(out, "| fault | timeouts | faults measured | p50 | p99 | max | verdict |")
	fmt.Fprintln(out, "| --- | --- | ---: | ---: | ---: | ---: | --- |")
	var failed []string
	for _, kind := range strings.Split(*f.kinds, ",") {
		kind = strings.TrimSpace(kind)
		for _, ts := range timeoutSettings {
			var all []time.Duration
			verdict := "ok"
			for run := range *f.runs {
				dir := filepath.Join(work, fmt.Sprintf("recovery-%s-%s-%d", kind, ts.name, run))
				stderrf("%s, %s timeouts, run %d ... ", kind, ts.name, run+1)
				ctx, cancel := context.WithTimeout(context.Background(), *f.duration+10*time.Minute)
				res, err := chaos.Run(ctx, chaos.Config{
					Scenario: kind, Duration: *f.duration, Seed: uint64(run + 1), Binary: bin, Dir: dir,
					Hosts:    []string{"127.0.0.21", "127.0.0.22", "127.0.0.23", "127.0.0.24"},
					Settings: ts.settings,
				})
				cancel()
				switch {
				case err != nil:
					verdict = "error: " + err.Error()
					failed = append(failed, fmt.Sprintf("%s (%s): %v", kind, ts.name, err))
				case !res.OK():
					verdict = "FAILED"
					failed = append(failed, fmt.Sprintf("%s (%s): %v", kind, ts.name, res))
				}
				stderrf("%d faults, %s\n", len(res.Recoveries), verdict)
				all = append(all, res.Recoveries...)
				if err == nil && res.OK() {
					os.RemoveAll(dir)
				}
			}
			slices.Sort(all)
			row := []string{kind, ts.name, fmt.Sprint(len(all)), "-", "-", "-", verdict}
			if len(all) > 0 {
				row[3], row[4], row[5] = secs(pct(all, 50))+" s", secs(pct(all, 99))+" s", secs(all[len(all)-1])+" s"
			}
			fmt.Fprintf(out, "| %s |\n", strings.Join(row, " | "))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("runs that failed, lost data or did not heal:\n%s", strings.Join(failed, "\n"))
	}
	return nil
}

// pct is the p-th percentile of sorted ds (nearest rank).
func pct(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p + 99) / 100
	return ds[max(0, min(len(ds)-1, i-1))]
}
