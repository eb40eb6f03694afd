package cli

// skein chaos: faults injected into a running cluster through its nodes'
// admin APIs (--admin, or SKEIN_ADMIN: one address per node), and signals
// to the nodes of this host.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinlog/skein/chaos"
)

const (
	defaultAdmin = "127.0.0.1:9644"
	envAdmin     = "SKEIN_ADMIN"
)

// chaosFlags are the flags every chaos command shares.
type chaosFlags struct {
	admin   adminFlag
	timeout time.Duration
	// HTTPS and credentials for the admin APIs (security.go).
	security securityFlags
}

func newChaosCommand(environ []string, stdout io.Writer) *cobra.Command {
	f := &chaosFlags{}
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Inject faults into a running cluster and check what they did",
		Long: "skein chaos breaks a cluster on purpose: actors (panic, stop, delay, drop),\n" +
			"links between nodes (cut, slow, lossy), nodes (kill, pause, resume), clocks and\n" +
			"disks. It reaches every node's admin API (--admin, one address per node); a\n" +
			"node refuses faults unless started with chaos.enable=true. Every fault ends by\n" +
			"itself after --for (default 60s); heal ends them all now.",
		Args: cobra.NoArgs,
	}
	fs := cmd.PersistentFlags()
	f.admin.register(cmd, environ, "comma-separated admin addresses of the nodes, host:port")
	fs.DurationVar(&f.timeout, "timeout", defaultTimeout, "bound on each admin request")
	f.security.register(fs, environ)
	f.security.bind(cmd)
	cmd.AddCommand(newChaosListCommand(f, stdout))
	for _, kind := range []string{"panic", "stop", "delay", "drop"} {
		cmd.AddCommand(newChaosActorCommand(f, stdout, kind))
	}
	cmd.AddCommand(newChaosLinkCommand(f, stdout, "cut", "Cut the links between two nodes: every message between them is dropped, whatever sent it"))
	cmd.AddCommand(newChaosLinkCommand(f, stdout, "slow", "Delay the messages between two nodes (--delay, --jitter), in order"))
	cmd.AddCommand(newChaosLinkCommand(f, stdout, "lossy", "Drop a fraction of the messages between two nodes (--drop 20%)"))
	cmd.AddCommand(newChaosHealCommand(f, stdout))
	cmd.AddCommand(newChaosSignalCommand(f, stdout, "kill"))
	cmd.AddCommand(newChaosSignalCommand(f, stdout, "pause"))
	cmd.AddCommand(newChaosSignalCommand(f, stdout, "resume"))
	cmd.AddCommand(newChaosClockCommand(f, stdout))
	cmd.AddCommand(newChaosDiskCommand(f, stdout))
	cmd.AddCommand(newChaosEventsCommand(f, stdout))
	cmd.AddCommand(newChaosRunCommand(f, stdout))
	return cmd
}

// addrs returns the nodes' admin addresses: --admin, SKEIN_ADMIN or the
// profile's.
func (f *chaosFlags) addrs() ([]string, error) { return f.admin.addrs(&f.security) }

// dial reaches every node of --admin, and returns them with a context
// that bounds the command's requests by --timeout.
func (f *chaosFlags) dial(cmd *cobra.Command) (*chaos.Nodes, context.Context, context.CancelFunc, error) {
	addrs, err := f.addrs()
	if err != nil {
		return nil, nil, nil, err
	}
	access, err := f.security.access()
	if err != nil {
		return nil, nil, nil, usageError(err.Error())
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
	ns, err := chaos.Dial(ctx, addrs, access)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ns, ctx, cancel, nil
}

// nodeArg parses a node id argument.
func nodeArg(s string) (int32, error) {
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, usageError(fmt.Sprintf("node %q: not a node id", s))
	}
	return int32(id), nil
}

// parseFraction reads "20%" or "0.2" as 0.2.
func parseFraction(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || v <= 0 || v > 1 {
		return 0, usageError(fmt.Sprintf("%q is not a fraction in (0, 1] (20%% or 0.2)", s))
	}
	return v, nil
}

func durationString(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// chaosNodeView is a node of chaos list, as -o json and yaml print it:
// who it is, its actor tree and the faults active on it. Clock is null
// when the node's clock is not moved, Disk when its disk does not fail;
// Error says why the rest could not be read (what was not read is null).
type chaosNodeView struct {
	Node        int32          `json:"node"`
	Admin       string         `json:"admin"`
	Kafka       string         `json:"kafka"`
	PID         int            `json:"pid"`
	ChaosEnable bool           `json:"chaos_enable"`
	Actors      []*chaos.Actor `json:"actors"`
	Faults      []chaos.Fault  `json:"faults"`
	Links       []chaos.Link   `json:"links"`
	Clock       *chaos.Clock   `json:"clock"`
	Disk        *chaos.Disk    `json:"disk"`
	Error       string         `json:"error,omitempty"`
	// actorsRead is whether the actor tree was read: the text shows
	// nothing more of a node whose actors could not be.
	actorsRead bool
}

func newChaosListCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show every node's actor tree (path, kind, role, mailbox, restarts) and the faults active now",
		Long: "Show every node of --admin: its id, addresses, process and whether it accepts\n" +
			"faults (chaos.enable); its actor tree with each actor's kind, role, epoch,\n" +
			"mailbox length and restarts; and the faults active on it (actors, links,\n" +
			"clock, disk) with when they end. -o json or yaml prints a list of the nodes.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			var errs []error
			nodes := []*chaosNodeView{}
			for _, id := range ns.IDs() {
				v, err := chaosNodeOf(ctx, ns, id)
				if err != nil {
					errs = append(errs, err)
				}
				if *out == outputText {
					v.text(stdout)
				}
				nodes = append(nodes, v)
			}
			if *out != outputText {
				if err := out.write(stdout, nodes, nil); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}

// chaosNodeOf reads node id's actors and faults. A view is returned with
// the error: what was read before it.
func chaosNodeOf(ctx context.Context, ns *chaos.Nodes, id int32) (*chaosNodeView, error) {
	a, _ := ns.Admin(id)
	info := ns.Info(id)
	v := &chaosNodeView{Node: id, Admin: a.Addr, Kafka: info.Kafka, PID: info.PID, ChaosEnable: info.Chaos}
	fail := func(err error) (*chaosNodeView, error) {
		v.Error = err.Error()
		return v, err
	}
	var err error
	if v.Actors, err = a.Actors(ctx); err != nil {
		return fail(err)
	}
	if v.Actors == nil {
		v.Actors = []*chaos.Actor{}
	}
	v.actorsRead = true
	if v.Faults, err = a.Faults(ctx); err != nil {
		return fail(err)
	}
	if v.Links, err = a.Links(ctx); err != nil {
		return fail(err)
	}
	c, err := a.Clock(ctx)
	if err != nil {
		return fail(err)
	}
	if c.Offset != "" && c.Offset != "0s" {
		v.Clock = &c
	}
	d, err := a.Disk(ctx)
	if err != nil {
		return fail(err)
	}
	if d.Fail != "" {
		v.Disk = &d
	}
	return v, nil
}

// text prints the node as chaos list does: a line of who it is, its actor
// tree and its faults.
func (v *chaosNodeView) text(w io.Writer) {
	chaosState := "refused (chaos.enable=false)"
	if v.ChaosEnable {
		chaosState = "enabled"
	}
	fmt.Fprintf(w, "NODE %d  admin %s  kafka %s  pid %d  faults %s\n", v.Node, v.Admin, v.Kafka, v.PID, chaosState)
	if !v.actorsRead {
		return
	}
	rows := [][]string{{"ACTOR", "KIND", "ROLE", "EPOCH", "MAILBOX", "RESTARTS"}}
	var walk func(as []*chaos.Actor, depth int)
	walk = func(as []*chaos.Actor, depth int) {
		for _, x := range as {
			epoch := ""
			if x.Epoch != 0 || x.Role != "" {
				epoch = strconv.Itoa(int(x.Epoch))
			}
			rows = append(rows, []string{strings.Repeat("  ", depth) + x.Name, x.Kind, x.Role, epoch,
				strconv.FormatInt(x.MailboxLength, 10), strconv.FormatInt(x.Restarts, 10)})
			walk(x.Children, depth+1)
		}
	}
	walk(v.Actors, 0)
	printTable(w, rows)
	if faults := v.faultRows(); len(faults) == 0 {
		fmt.Fprintln(w, "no faults")
	} else {
		printTable(w, append([][]string{{"FAULT", "TARGET", "WHAT", "UNTIL"}}, faults...))
	}
	fmt.Fprintln(w)
}

// faultRows are the node's faults of every type as table rows.
func (v *chaosNodeView) faultRows() [][]string {
	var rows [][]string
	for _, x := range v.Faults {
		what := x.Kind
		for _, kv := range [][2]string{{"message", x.Message}, {"delay", x.Delay}, {"every", x.Every}} {
			if kv[1] != "" {
				what += " " + kv[0] + " " + kv[1]
			}
		}
		if x.Rate > 0 {
			what += fmt.Sprintf(" rate %g", x.Rate)
		}
		if x.Count > 0 {
			what += fmt.Sprintf(" count %d", x.Count)
		}
		what += fmt.Sprintf(" (fired %d)", x.Fired)
		rows = append(rows, []string{"actor " + strconv.FormatUint(x.ID, 10), x.Actor, what, x.Expires})
	}
	for _, l := range v.Links {
		var what []string
		if l.Cut {
			what = append(what, "cut")
		}
		if l.Drop > 0 {
			what = append(what, fmt.Sprintf("drop %g%%", l.Drop*100))
		}
		if l.Delay != "" || l.Jitter != "" {
			what = append(what, "delay "+l.Delay+" jitter "+l.Jitter)
		}
		rows = append(rows, []string{"link", fmt.Sprintf("to node %d (%s)", l.Peer, l.Address), strings.Join(what, ", "), l.Expires})
	}
	if c := v.Clock; c != nil {
		rows = append(rows, []string{"clock", "", "offset " + c.Offset, c.Expires})
	}
	if d := v.Disk; d != nil {
		rows = append(rows, []string{"disk", "", "fail " + d.Fail, d.Expires})
	}
	return rows
}

// nodeOfPattern is the node an actor pattern names ("node/2/..."), or -1.
var nodeOfPattern = regexp.MustCompile(`^node/(\d+)(/|$)`)

func newChaosActorCommand(f *chaosFlags, stdout io.Writer, kind string) *cobra.Command {
	var node int32
	var every, lifetime, delay time.Duration
	var rate, message string
	var count int
	var after bool
	short := map[string]string{
		"panic": "Make actors panic (as a bug would): their supervisors restart them",
		"stop":  "Stop actors (no failure, no restart by the supervisor)",
		"delay": "Delay the messages of actors (--delay): slow actors, growing mailboxes",
		"drop":  "Drop the messages of actors: lost messages nobody is told of",
	}[kind]
	cmd := &cobra.Command{
		Use:   kind + " ACTOR-PATH-OR-GLOB",
		Short: short,
		Long: short + ".\nActors are named by their path (node/2/partitions/orders-3, node/1/controller);\n" +
			"\"*\" matches any run of characters (node/*/groups/*). Without --every or --rate\n" +
			"the fault applies to --count messages (default 1; delay: all).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			pattern := args[0]
			fault := chaos.Fault{Actor: pattern, Kind: kind, Message: message, Count: count, After: after,
				Delay: durationString(delay), Every: durationString(every), For: durationString(lifetime)}
			if rate != "" {
				r, err := parseFraction(rate)
				if err != nil {
					return err
				}
				fault.Rate = r
			}
			if kind == "delay" && delay <= 0 {
				return usageError("delay needs --delay")
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			targets := ns.IDs()
			if m := nodeOfPattern.FindStringSubmatch(pattern); m != nil {
				id, _ := nodeArg(m[1])
				targets = []int32{id}
			}
			if node >= 0 {
				targets = []int32{node}
			}
			var errs []error
			for _, id := range targets {
				a, err := ns.Admin(id)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				set, err := a.AddFault(ctx, fault)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(stdout, "node %d: fault %d: %s %s until %s\n", id, set.ID, kind, pattern, set.Expires)
			}
			return errors.Join(errs...)
		},
	}
	fl := cmd.Flags()
	fl.Int32Var(&node, "node", -1, "only on this node (default: the node the path names, else every node)")
	fl.DurationVar(&every, "every", 0, "apply once every this long, for as long as the fault lasts")
	fl.DurationVar(&lifetime, "for", time.Minute, "how long the fault lasts")
	fl.StringVar(&rate, "rate", "", "apply to this fraction of the messages (20% or 0.2)")
	fl.IntVar(&count, "count", 0, "apply to this many messages, then end")
	fl.StringVar(&message, "message", "", "only messages of this Go type (Append, partition.Append)")
	if kind == "delay" {
		fl.DurationVar(&delay, "delay", 0, "how long each message waits")
	}
	if kind == "panic" {
		fl.BoolVar(&after, "after", false, "panic after handling the message instead of before")
	}
	return cmd
}

func newChaosLinkCommand(f *chaosFlags, stdout io.Writer, kind, short string) *cobra.Command {
	var oneWay bool
	var lifetime, delay, jitter time.Duration
	var drop string
	cmd := &cobra.Command{
		Use:   kind + " NODE NODE",
		Short: short,
		Long: short + ".\nThe fault is in Skein's remoting (no root or iptables needed): clients still\n" +
			"reach both nodes. --one-way faults only the first node's messages to the second.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := nodeArg(args[0])
			if err != nil {
				return err
			}
			b, err := nodeArg(args[1])
			if err != nil {
				return err
			}
			if a == b {
				return usageError("a link joins two different nodes")
			}
			link := chaos.Link{For: durationString(lifetime)}
			switch kind {
			case "cut":
				link.Cut = true
			case "slow":
				if delay <= 0 && jitter <= 0 {
					return usageError("slow needs --delay or --jitter")
				}
				link.Delay, link.Jitter = durationString(delay), durationString(jitter)
			case "lossy":
				if drop == "" {
					return usageError("lossy needs --drop")
				}
				if link.Drop, err = parseFraction(drop); err != nil {
					return err
				}
				link.Delay, link.Jitter = durationString(delay), durationString(jitter)
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			// Both nodes must be known before either is faulted.
			for _, id := range []int32{a, b} {
				if _, err := ns.Admin(id); err != nil {
					return err
				}
			}
			pairs := [][2]int32{{a, b}}
			if !oneWay {
				pairs = append(pairs, [2]int32{b, a})
			}
			for _, p := range pairs {
				adm, _ := ns.Admin(p[0])
				l := link
				l.Peer = p[1]
				if err := adm.SetLink(ctx, l); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "node %d -> node %d: %s for %s\n", p[0], p[1], kind, lifetime)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&oneWay, "one-way", false, "fault only the first node's messages to the second")
	fl.DurationVar(&lifetime, "for", time.Minute, "how long the fault lasts")
	if kind == "slow" || kind == "lossy" {
		fl.DurationVar(&delay, "delay", 0, "delay each message this long")
		fl.DurationVar(&jitter, "jitter", 0, "and up to this much more, at random (order is kept)")
	}
	if kind == "lossy" {
		fl.StringVar(&drop, "drop", "", "the fraction of messages dropped (20% or 0.2)")
	}
	return cmd
}

func newChaosHealCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "heal [NODE...]",
		Short: "End every fault now (of the nodes named, or all), resuming the nodes skein chaos paused",
		RunE: func(cmd *cobra.Command, args []string) error {
			addrs, err := f.addrs()
			if err != nil {
				return err
			}
			// A paused node does not answer: resume first, by address.
			for _, addr := range addrs {
				if err := chaos.Resume(addr); err == nil {
					fmt.Fprintf(stdout, "%s: resumed\n", addr)
				}
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			targets := ns.IDs()
			if len(args) > 0 {
				targets = nil
				for _, s := range args {
					id, err := nodeArg(s)
					if err != nil {
						return err
					}
					targets = append(targets, id)
				}
			}
			var errs []error
			for _, id := range targets {
				a, err := ns.Admin(id)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				n, err := a.Heal(ctx)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(stdout, "node %d: %d faults removed\n", id, n)
			}
			return errors.Join(errs...)
		},
	}
}

func newChaosSignalCommand(f *chaosFlags, stdout io.Writer, kind string) *cobra.Command {
	var lifetime time.Duration
	short := map[string]string{
		"kill":   "Kill a node's process (SIGKILL): a crash; the node must run on this host",
		"pause":  "Pause a node's process (SIGSTOP) for --for, then resume it: a zombie that wakes up",
		"resume": "Resume a node paused by skein chaos pause",
	}[kind]
	cmd := &cobra.Command{
		Use:   kind + " NODE",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := nodeArg(args[0])
			if err != nil {
				return err
			}
			if kind == "resume" {
				// The paused node cannot say which address is its own: try
				// each.
				addrs, err := f.addrs()
				if err != nil {
					return err
				}
				for _, addr := range addrs {
					if err := chaos.Resume(addr); err == nil {
						fmt.Fprintf(stdout, "node at %s resumed\n", addr)
						return nil
					}
				}
				return fmt.Errorf("no node of --admin was paused by skein chaos on this host (node %d)", id)
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if kind == "kill" {
				if err := ns.Signal(id, syscall.SIGKILL); err != nil {
					return err
				}
				fmt.Fprintf(stdout, "node %d (pid %d) killed\n", id, ns.Info(id).PID)
				return nil
			}
			a, _ := ns.Admin(id)
			if err := ns.Pause(id); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "node %d (pid %d) paused for %s; interrupt to resume now\n", id, ns.Info(id).PID, lifetime)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			select {
			case <-ctx.Done():
			case <-time.After(lifetime):
			}
			if err := chaos.Resume(a.Addr); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "node %d resumed\n", id)
			return nil
		},
	}
	if kind == "pause" {
		cmd.Flags().DurationVar(&lifetime, "for", time.Minute, "how long the node stays paused")
	}
	return cmd
}

func newChaosClockCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	var offset, jump, lifetime time.Duration
	cmd := &cobra.Command{
		Use:   "clock NODE (--offset D | --jump D)",
		Short: "Move a node's clock: set its offset from the system's, or step it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := nodeArg(args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("offset") == cmd.Flags().Changed("jump") {
				return usageError("give one of --offset and --jump")
			}
			c := chaos.Clock{For: durationString(lifetime)}
			if cmd.Flags().Changed("offset") {
				c.Offset = offset.String()
			} else {
				c.Jump = jump.String()
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			a, err := ns.Admin(id)
			if err != nil {
				return err
			}
			set, err := a.SetClock(ctx, c)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "node %d: clock offset %s (now %s) until %s\n", id, set.Offset, set.Now, set.Expires)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&offset, "offset", 0, "the clock's distance from the system's (90s, -1h)")
	fl.DurationVar(&jump, "jump", 0, "step the clock by this much from where it is")
	fl.DurationVar(&lifetime, "for", time.Minute, "how long the fault lasts")
	return cmd
}

func newChaosDiskCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	var writes, syncs, full bool
	var lifetime time.Duration
	var dir string
	cmd := &cobra.Command{
		Use:   "disk NODE (--fail-writes | --fail-syncs | --full) [--dir LOG_DIR]",
		Short: "Fail a node's disk: writes or syncs (EIO), or all space gone (ENOSPC)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := nodeArg(args[0])
			if err != nil {
				return err
			}
			var fail []string
			for name, on := range map[string]bool{"writes": writes, "syncs": syncs, "full": full} {
				if on {
					fail = append(fail, name)
				}
			}
			if len(fail) != 1 {
				return usageError("give one of --fail-writes, --fail-syncs and --full")
			}
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			a, err := ns.Admin(id)
			if err != nil {
				return err
			}
			if err := a.SetDisk(ctx, chaos.Disk{Fail: fail[0], For: durationString(lifetime), Dir: dir}); err != nil {
				return err
			}
			if dir != "" {
				fmt.Fprintf(stdout, "node %d: log dir %s fails %s for %s\n", id, dir, fail[0], lifetime)
				return nil
			}
			fmt.Fprintf(stdout, "node %d: disk fails %s for %s\n", id, fail[0], lifetime)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&writes, "fail-writes", false, "every write fails (EIO)")
	fl.BoolVar(&syncs, "fail-syncs", false, "every fsync fails (EIO)")
	fl.BoolVar(&full, "full", false, "no space left (ENOSPC) for writes and new files")
	fl.StringVar(&dir, "dir", "", "only this log dir of the node's (the node's path; its files, not the syncfs rounds)")
	fl.DurationVar(&lifetime, "for", time.Minute, "how long the fault lasts")
	return cmd
}

// chaosEvent is an event of chaos events, as -o json and yaml print it:
// the node's supervision journal's event with the node's id.
type chaosEvent struct {
	Node int32 `json:"node"`
	chaos.Event
}

func newChaosEventsCommand(f *chaosFlags, stdout io.Writer) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show each node's supervision journal: actors started, failed, restarted (with the time to recover), stopped, roles and epochs changed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ns, ctx, cancel, err := f.dial(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			all := []chaosEvent{}
			for _, id := range ns.IDs() {
				a, _ := ns.Admin(id)
				events, _, err := a.Events(ctx, 0)
				if err != nil {
					return err
				}
				for _, e := range events {
					all = append(all, chaosEvent{id, e})
				}
			}
			return out.write(stdout, all, func() error {
				rows := [][]string{{"NODE", "TIME", "ACTOR", "EVENT", "DETAIL"}}
				for _, e := range all {
					detail := e.Cause
					switch e.Type {
					case "restarted":
						detail = fmt.Sprintf("recovered in %.3fs", e.RecoverySeconds)
					case "role", "epoch":
						detail = fmt.Sprintf("%s epoch %d", e.Role, e.Epoch)
					}
					rows = append(rows, []string{strconv.Itoa(int(e.Node)), e.Time.Format("15:04:05.000"), e.Actor, e.Type, detail})
				}
				printTable(stdout, rows)
				return nil
			})
		},
	}
	out = addOutputFlag(cmd)
	return cmd
}
