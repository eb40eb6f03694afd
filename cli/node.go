package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/node"
)

// stopTimeout bounds the graceful stop after SIGTERM or SIGINT.
const stopTimeout = 10 * time.Second

func newNodeCommand(environ []string, stdout, stderr io.Writer) *cobra.Command {
	var printConfig bool
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "node",
		Short: "Run a Skein node until SIGTERM or SIGINT",
		Long: "Run a Skein node until SIGTERM or SIGINT, then stop it gracefully.\n\n" +
			"Settings come from, lowest precedence first: the defaults, the YAML file of\n" +
			"--config, SKEIN_* environment variables (SKEIN_DATA_DIR for data.dir,\n" +
			"SKEIN_LOG_SEGMENT_BYTES for log.segment.bytes) and the flags. Keys are Kafka's\n" +
			"broker config names where Kafka has the setting; --print-config lists them all.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// NB: catch the signals before anything is logged, so that a
			// SIGTERM sent as soon as the node logs its configuration stops
			// it gracefully instead of killing it.
			signals := make(chan os.Signal, 2)
			signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
			defer signal.Stop(signals)

			cfg, err := configs.Load(cmd.Flags(), environ)
			if err != nil {
				return exitError{code: 2, err: err}
			}
			if printConfig {
				_, err := fmt.Fprint(stdout, cfg.YAML())
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return exitError{code: 2, err: err}
				}
				defer stop()
			}
			return runNode(cfg, stderr, signals)
		},
	}
	configs.RegisterFlags(cmd.Flags())
	cmd.Flags().BoolVar(&printConfig, "print-config", false, "print the effective configuration as YAML (the --config format) and exit")
	// NB: hidden because it is a developer's tool, not a setting: the
	// broker benchmark (tests/bench) profiles a node running as its own
	// process with it, so that the profile holds only the broker's work.
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the node to FILE until it stops")
	cmd.Flags().MarkHidden("cpuprofile")
	cmd.Flags().SortFlags = false
	return cmd
}

// startCPUProfile starts profiling this process's CPU into the file at path
// and returns what stops it and closes the file, to be called after the node
// has stopped.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// runNode runs a node with cfg until a signal arrives, logging to stderr.
func runNode(cfg configs.Node, stderr io.Writer, signals <-chan os.Signal) error {
	f, isFile := stderr.(*os.File)
	log, err := logging.New(stderr, cfg.LogLevel, cfg.LogFormat, isFile && logging.IsTerminal(f))
	if err != nil {
		return exitError{code: 2, err: err}
	}
	settings := cfg.Map()
	fields := make(map[string]any, len(settings))
	for k, v := range settings {
		fields[k] = v
	}
	log.Info().Fields(fields).Msg("effective configuration")

	n, err := node.Start(cfg, log)
	if err != nil {
		log.Error().Err(err).Msg("start failed")
		return exitError{code: 1}
	}
	select {
	case sig := <-signals:
		log.Info().Str("signal", sig.String()).Msg("stopping")
	case <-n.Done():
		log.Error().Msg("the node's root actor stopped after repeated failures; exiting")
		return exitError{code: 1}
	}
	// A second signal now gets Go's default action: the process dies at
	// once, for when the graceful stop hangs.
	signal.Reset(syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := n.Stop(ctx); err != nil {
		// What still runs is what the stop waited for: its stacks say why.
		log.Error().Err(err).Msg("graceful stop failed; the goroutines still running follow on stderr")
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		return exitError{code: 1}
	}
	return nil
}
