package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run runs the command line args and returns the process's exit code.
func run(args, environ []string, stdout, stderr *os.File) int {
	root := newRootCommand(environ, stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		var exit exitError
		if !errors.As(err, &exit) {
			fmt.Fprintf(stderr, "skein: %v\n", err)
			return 1
		}
		if exit.err != nil {
			fmt.Fprintf(stderr, "skein: %v\n", exit.err)
		}
		return exit.code
	}
	return 0
}

// exitError ends the process with code after printing err, if any (an error
// already logged is not printed again).
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return fmt.Sprintf("exit %d: %v", e.code, e.err) }

func newRootCommand(environ []string, stdout, stderr *os.File) *cobra.Command {
	root := &cobra.Command{
		Use:   "skein",
		Short: "Skein, a Kafka-compatible log broker",
		Long: "Skein is a Kafka-compatible log broker. `skein node` runs a node; with no\n" +
			"arguments it is a single node with its data in ./data and Kafka on 127.0.0.1:9092.",
		SilenceErrors:     true, // run prints them
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newNodeCommand(environ, stdout, stderr))
	return root
}
