package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

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
	msg := err.Error()
	if strings.Contains(msg, kgoNoController) {
		msg += noControllerHint
	}
	fmt.Fprintf(w, "skein: %s\n", msg)
}

// kgoNoController is kgo's error when the brokers name no active
// controller for a request that must go to it (its errUnknownController,
// which it does not export); noControllerHint is what a node logs then
// ("partition: ISR change refused", with its reason).
const (
	kgoNoController  = "broker replied that the controller broker is not available"
	noControllerHint = ": the cluster has no active controller (no quorum): is a majority of controller.quorum.voters running and reachable? (skein cluster info shows the quorum)"
)

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
			"consume, cluster, acl, user, quota (--brokers, or SKEIN_BROKERS, names the\n" +
			"brokers to ask); chaos injects faults into a running cluster and extension\n" +
			"manages its extension instances (--admin, or SKEIN_ADMIN, names a node's\n" +
			"admin API). --profile NAME (or SKEIN_PROFILE) takes the brokers, admin API, TLS\n" +
			"and SASL settings from a profile of ~/.config/skein/config.yaml (skein profile).",
		SilenceErrors: true, // run prints them
		SilenceUsage:  true,
		// skein completion is ours (completion.go), with only the shells
		// it documents.
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.Long += "\n\n" + exitCodesHelp
	// --version (and -v) prints what `skein version` does.
	bv := buildInfo()
	root.Version = bv.Version
	root.SetVersionTemplate(bv.text())
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
	root.AddCommand(newACLCommand(environ, stdout))
	root.AddCommand(newUserCommand(environ, stdout))
	root.AddCommand(newQuotaCommand(environ, stdout))
	root.AddCommand(newChaosCommand(environ, stdout))
	root.AddCommand(newExtensionCommand(environ, stdout))
	root.AddCommand(newVersionCommand(stdout))
	root.AddCommand(newCompletionCommand(stdout))
	root.AddCommand(newProfileCommand(environ, stdout))
	addProfileFlag(root, environ)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError(fmt.Sprintf("%v (see %s --help)", err, cmd.CommandPath()))
	})
	usageErrors(root)
	return root
}

// exitCodesHelp is the exit codes' part of `skein --help`; README.md's
// "Command line" says the same.
const exitCodesHelp = "Exit codes: 0 when the command did what it was asked; 1 when the cluster, a node\n" +
	"or the system refused or failed it (a Kafka error, no answer within --timeout,\n" +
	"records not acknowledged within --delivery-timeout); 2 for a mistake in the\n" +
	"command line (an unknown command or flag, a missing or extra argument, a bad\n" +
	"value or setting), which is one line on stderr saying what was wrong."

// usageErrors makes every mistake in the command line below cmd a
// usageError (exit 2, one line): arguments a command's Args refuses, and
// an unknown subcommand of a family of commands (skein topic creat), which
// cobra would answer with the family's help and exit 0. A family named
// without a subcommand (skein topic) prints its help, or runs the family's
// own command if it has one (skein cluster features).
func usageErrors(cmd *cobra.Command) {
	if cmd.HasSubCommands() {
		// NB: with Args set, cobra hands the unknown word to RunE instead
		// of deciding on its own (legacyArgs).
		cmd.Args = cobra.ArbitraryArgs
		if own := cmd.RunE; own != nil {
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				if len(args) == 0 {
					return own(cmd, args)
				}
				return unknownCommand(cmd, args)
			}
		} else {
			cmd.RunE = unknownCommand
		}
		cmd.SuggestionsMinimumDistance = 2 // cobra's default, set only when it suggests itself
	} else if check := cmd.Args; check != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
				return usageError(fmt.Sprintf("%s: %v (usage: %s)", name, err, cmd.UseLine()))
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageErrors(sub)
	}
}

// unknownCommand is the RunE of a family of commands: without arguments
// its help, else a usage error naming the unknown subcommand and the
// closest known ones (cobra's SuggestionsFor: by edit distance and prefix).
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		return usageError(fmt.Sprintf("%s; did you mean %s?", msg, orList(s)))
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return usageError(fmt.Sprintf("%s; the commands are %s", msg, strings.Join(names, ", ")))
}

// orList quotes words and joins them with commas and a last "or".
func orList(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = strconv.Quote(w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
