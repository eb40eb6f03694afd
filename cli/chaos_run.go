package cli

// skein chaos run: a scenario's faults against a cluster under a checked
// workload.

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinlog/skein/chaos"
)

func newChaosRunCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	var cfg chaos.Config
	var hosts, brokers string
	var seed uint64
	long := "Start a local cluster of --nodes `skein node` processes (or use the cluster of\n" +
		"--brokers and --admin), run a workload on it (idempotent acks=all producers, a\n" +
		"consumer group, a transactional producer), apply the scenario's faults for\n" +
		"--duration, heal, and check the history: every acknowledged record read back\n" +
		"exactly once, in order, at its offset; nothing read that was never sent; committed\n" +
		"offsets never back; aborted transactions never read committed, committed ones\n" +
		"whole; every partition led after the heal. Exits 1 on any violation.\n\nScenarios:\n"
	for _, n := range chaos.ScenarioNames() {
		long += fmt.Sprintf("  %-15s %s\n", n, chaos.About(n))
	}
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a fault scenario against a cluster under a workload and check that nothing was lost",
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.Scenario = args[0]
			if !slices.Contains(chaos.ScenarioNames(), cfg.Scenario) {
				return usageError(fmt.Sprintf("no scenario %q; there are: %s", cfg.Scenario, strings.Join(chaos.ScenarioNames(), ", ")))
			}
			cfg.Seed = seed
			if !cmd.Flags().Changed("seed") {
				cfg.Seed = uint64(time.Now().UnixNano())
			}
			cfg.Hosts = splitList(hosts)
			if brokers != "" {
				cfg.Brokers = splitList(brokers)
				addrs, err := f.addrs()
				if err != nil {
					return err
				}
				cfg.Admin = addrs
				if cfg.Access, err = f.security.access(); err != nil {
					return usageError(err.Error())
				}
			}
			cfg.Out = stdout
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := chaos.Run(ctx, cfg)
			if err != nil {
				if res.Dir != "" {
					fmt.Fprintf(stdout, "the nodes' data and logs: %s\n", res.Dir)
				}
				return err
			}
			fmt.Fprintln(stdout, res)
			if len(res.Recoveries) > 0 {
				ds := slices.Clone(res.Recoveries)
				slices.Sort(ds)
				fmt.Fprintf(stdout, "recovery after each fault: %d measured, p50 %v, max %v\n", len(ds),
					ds[len(ds)/2].Truncate(time.Millisecond), ds[len(ds)-1].Truncate(time.Millisecond))
			}
			fmt.Fprintf(stdout, "seed %d (--seed repeats the run's choices)\n", cfg.Seed)
			if !res.OK() {
				if res.Dir != "" {
					fmt.Fprintf(stdout, "the nodes' data and logs are kept in %s\n", res.Dir)
				}
				return exitError{code: 1}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&cfg.Duration, "duration", time.Minute, "how long faults are applied")
	fl.Uint64Var(&seed, "seed", 0, "seed of the run's random choices (default: the time)")
	fl.IntVar(&cfg.Nodes, "nodes", 0, "nodes of the local cluster (default: 3, or what the scenario needs)")
	fl.StringVar(&hosts, "hosts", "", "comma-separated addresses of the local nodes, one each (default 127.0.0.11, 127.0.0.12, ...)")
	fl.StringVar(&cfg.Binary, "skein", "", "the skein binary the local nodes run (default: this one)")
	fl.StringVar(&cfg.Dir, "dir", "", "where the local nodes keep data and logs (default: a temporary directory, removed if the run holds)")
	fl.StringArrayVar(&cfg.Settings, "set", nil, "a setting for every local node, key=value (repeatable)")
	fl.StringVar(&brokers, "brokers", "", "an existing cluster's brokers, host:port,... (its nodes' admin addresses in --admin)")
	fl.Int32Var(&cfg.Partitions, "partitions", 6, "partitions of each workload topic")
	fl.IntVar(&cfg.Producers, "producers", 2, "idempotent producers")
	fl.IntVar(&cfg.Rate, "rate", 1000, "records a second, all producers together")
	return cmd
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
