package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Main runs the skein command line on the process's arguments,
// environment and standard streams, and exits the process with the
// command's exit code: a binary's main calls it and nothing else
// (cmd/skein, or a skein built with more extension kinds). `skein node`
// first executes itself again with a coarser timer slack (relaxTimers).
func Main() {
	if len(os.Args) > 1 && os.Args[1] == "node" {
		relaxTimers()
	}
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command line args and returns the process's exit code. It
// reads only environ, never the process's environment, and only the given
// streams, so that tests can run commands in-process.
func run(args, environ []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(environ, stdin, stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(context.Background()); err != nil {
		var exit exitError
		if !errors.As(err, &exit) {
			printError(stderr, err)
			return 1
		}
		if exit.err != nil {
			printError(stderr, exit.err)
		}
		return exit.code
	}
	return 0
}

// printError prints err as "skein: err", one line for each error of a join
// (a command on several topics reports each topic that failed).
func printError(w io.Writer, err error) {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			printError(w, e)
		}
		return
	}
	fmt.Fprintf(w, "skein: %v\n", err)
}

// exitError ends the process with code after printing err, if any (an error
// already logged is not printed again).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return fmt.Sprintf("exit %d: %v", e.code, e.err) }

func newRootCommand(environ []string, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "skein",
		Short: "Skein, a Kafka-compatible log broker",
		Long: "Skein is a Kafka-compatible log broker. `skein node` runs a node; with no\n" +
			"arguments it is a single node with its data in ./data and Kafka on 127.0.0.1:9092.\n" +
			"The other commands are a Kafka client for any broker: topic, group, produce,\n" +
			"consume, cluster (--brokers, or SKEIN_BROKERS, names the brokers to ask);\n" +
			"chaos injects faults into a running cluster and extension manages its\n" +
			"extension instances (--admin, or SKEIN_ADMIN, names a node's admin API).",
		SilenceErrors:     true, // run prints them
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newNodeCommand(environ, stdout, stderr))
	root.AddCommand(newTopicCommand(environ, stdout))
	root.AddCommand(newGroupCommand(environ, stdout))
	root.AddCommand(newTxnCommand(environ, stdout))
	root.AddCommand(newProducerCommand(environ, stdout))
	root.AddCommand(newProduceCommand(environ, stdin, stdout))
	root.AddCommand(newConsumeCommand(environ, stdout, stderr))
	root.AddCommand(newClusterCommand(environ, stdout))
	root.AddCommand(newChaosCommand(environ, stdout))
	root.AddCommand(newExtensionCommand(environ, stdout))
	return root
}
