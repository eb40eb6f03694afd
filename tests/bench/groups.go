package main

// The group coordinator failover benchmark (-groups): many groups, each
// with a committed offset, on one __consumer_offsets partition
// (offsets.topic.num.partitions=1) of one node; then the time for a
// group's coordinator to answer again after its actor panics (an
// injected fault, as `skein chaos` injects it) and after the node
// restarts, and the time of ListGroups. With -groups-bins it runs each of
// several skein binaries in turn, to compare builds on one machine in one
// run.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/skeinlog/skein/chaos"
)

type groupsFlags struct {
	on       *bool
	count    *int
	commits  *int
	list     *bool
	restarts *int
	bins     *string
	host     *string
}

// groupsConfig is one run of the benchmark.
type groupsConfig struct {
	count, commits, restarts int
	list                     bool              // time ListGroups (minutes before the index, with 10,000 groups)
	names                    []string          // the builds, in run order
	bins                     map[string]string // build name → skein binary
	host                     string            // loopback address of the node
	work                     string
}

func newGroupsFlags() groupsFlags {
	return groupsFlags{
		on:       flag.Bool("groups", false, "run the group coordinator failover benchmark (groups.go) instead"),
		count:    flag.Int("groups-count", 10000, "with -groups: groups on the one __consumer_offsets partition"),
		commits:  flag.Int("groups-commits", 1, "with -groups: offset commits per group (rounds over every group)"),
		list:     flag.Bool("groups-list", true, "with -groups: time ListGroups after the restart"),
		restarts: flag.Int("groups-restarts", 5, "with -groups: coordinator actor restarts timed (each of another group)"),
		bins:     flag.String("groups-bins", "", "with -groups: comma-separated NAME=PATH skein binaries to compare (default: one built from ./cmd/skein)"),
		host:     flag.String("groups-host", "127.0.0.1", "with -groups: the loopback address the node listens on (on ports free at the start, kept across the restart)"),
	}
}

// groupsResult is one binary's figures.
type groupsResult struct {
	name                   string
	setup                  time.Duration // committing an offset for every group
	fetch                  time.Duration // OffsetFetch of a loaded group, median
	actorRestart           []time.Duration
	stop                   time.Duration // SIGTERM to exit, every group's actor up
	stopErr                error
	nodeStart, nodeAnswer  time.Duration // process start to "node started"; to the first answer of a group
	listCold, listWarm     time.Duration // the first ListGroups after the restart, and the next
	listedCold, listedWarm int
}

// config returns the run the flags ask for, building skein from ./cmd/skein
// when no binaries are named.
func (f groupsFlags) config(work string) (groupsConfig, error) {
	c := groupsConfig{count: *f.count, commits: *f.commits, restarts: *f.restarts, list: *f.list, host: *f.host, work: work, bins: map[string]string{}}
	if c.count < 1 || c.commits < 1 || c.restarts < 1 {
		return c, fmt.Errorf("-groups-count, -groups-commits and -groups-restarts must be at least 1")
	}
	if *f.bins == "" {
		bin, err := buildSkein(work)
		if err != nil {
			return c, err
		}
		c.bins["this"], c.names = bin, []string{"this"}
	}
	for _, nb := range strings.Split(*f.bins, ",") {
		if nb == "" {
			continue
		}
		name, path, ok := strings.Cut(nb, "=")
		if !ok {
			return c, fmt.Errorf("-groups-bins: %q is not NAME=PATH", nb)
		}
		c.bins[name] = path
		c.names = append(c.names, name)
	}
	return c, nil
}

func runGroups(out io.Writer, c groupsConfig) error {
	var results []groupsResult
	for _, name := range c.names {
		stderrf("groups: %s (%s), %d groups\n", name, c.bins[name], c.count)
		r, err := groupsRun(c, c.bins[name], filepath.Join(c.work, "groups-"+name))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.name = name
		results = append(results, r)
	}
	fmt.Fprintf(out, "%d groups, each with %d offset commits, on one __consumer_offsets partition of one node (durability fsync).\n\n", c.count, c.commits)
	fmt.Fprintln(out, "| build | commit every group (setup) | OffsetFetch, loaded | after an actor panic: p50 | max | stop (SIGTERM to exit) | node restart: process start to a group's answer | of which to `node started` | first ListGroups after the restart | next ListGroups |")
	fmt.Fprintln(out, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, r := range results {
		slices.Sort(r.actorRestart)
		stop := secs(r.stop) + " s"
		if r.stopErr != nil {
			stop += " (" + r.stopErr.Error() + ")"
		}
		list := func(d time.Duration, n int) string {
			if n < 0 {
				return "not run"
			}
			return fmt.Sprintf("%s (%d groups)", msText(d), n)
		}
		fmt.Fprintf(out, "| %s | %s s | %s | %s | %s | %s | %s s | %s s | %s | %s |\n", r.name, secs(r.setup), msText(r.fetch),
			msText(pct(r.actorRestart, 50)), msText(r.actorRestart[len(r.actorRestart)-1]), stop, secs(r.nodeAnswer), secs(r.nodeStart),
			list(r.listCold, r.listedCold), list(r.listWarm, r.listedWarm))
	}
	return nil
}

// msText is d in ms, or in s from 10 s on.
func msText(d time.Duration) string {
	if d >= 10*time.Second {
		return secs(d) + " s"
	}
	return fmt.Sprintf("%.1f ms", ms(d))
}

// groupsRun measures one binary.
func groupsRun(c groupsConfig, bin, dir string) (groupsResult, error) {
	var r groupsResult
	kafkaAddr, err := freeAddr(c.host)
	if err != nil {
		return r, err
	}
	adminAddr, err := freeAddr(c.host)
	if err != nil {
		return r, err
	}
	start := func() (*broker, error) {
		cmd := exec.Command(bin, "node", "--data-dir", filepath.Join(dir, "data"),
			"--listen", kafkaAddr, "--admin-listen", adminAddr, "--log-format", "json",
			"--set", "offsets.topic.num.partitions=1", "--set", "chaos.enable=true")
		return startBroker(cmd, dir, skeinAddr)
	}
	b, err := start()
	if err != nil {
		return r, err
	}
	defer func() { b.stop() }()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.RetryTimeout(5*time.Minute))
	if err != nil {
		return r, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	const topic = "groups-bench"
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return r, err
	}
	group := func(i int) string { return fmt.Sprintf("bench-group-%05d", i) }
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range c.count * c.commits {
				i := k % c.count
				// A group's commits all come from one worker, in order:
				// from two, the round before could land last.
				if i%8 != w {
					continue
				}
				var o kadm.Offsets
				// The last round commits i, which fetch checks.
				o.AddOffset(topic, 0, int64(i+(c.commits-1-k/c.count)*c.count), -1)
				if resp, err := adm.CommitOffsets(ctx, group(i), o); err != nil || resp.Error() != nil {
					errs <- fmt.Errorf("commit %s: %v %v", group(i), err, resp.Error())
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return r, err
	default:
	}
	r.setup = time.Since(t0)
	stderrf("  setup %s s\n", secs(r.setup))

	// fetch asks for a group's offset until it is the one committed.
	fetch := func(i int) error {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); {
			o, err := adm.FetchOffsets(ctx, group(i))
			if err == nil {
				if c, ok := o.Lookup(topic, 0); ok && c.At == int64(i) {
					return nil
				}
			}
			time.Sleep(time.Millisecond)
		}
		return fmt.Errorf("%s: no answer with its offset", group(i))
	}
	var fetches []time.Duration
	for i := range 11 {
		t := time.Now()
		if err := fetch(c.count / 2); err != nil {
			return r, err
		}
		if i > 0 {
			fetches = append(fetches, time.Since(t))
		}
	}
	slices.Sort(fetches)
	r.fetch = pct(fetches, 50)

	admin := &chaos.Admin{Addr: adminAddr}
	for k := range c.restarts {
		i := (k*7919 + 13) % c.count
		g := group(i)
		if err := fetch(i); err != nil { // its actor is up
			return r, err
		}
		if _, err := admin.AddFault(ctx, chaos.Fault{Actor: "node/1/groups/" + g, Kind: "panic", Message: "Request", After: true, Count: 1}); err != nil {
			return r, err
		}
		if err := fetch(i); err != nil { // answered, then the actor panics
			return r, err
		}
		t := time.Now()
		if err := fetch(i); err != nil {
			return r, err
		}
		r.actorRestart = append(r.actorRestart, time.Since(t))
	}
	stderrf("  actor restarts %v\n", r.actorRestart)

	t1 := time.Now()
	r.stopErr = b.stop() // past its deadline, a node exits 1: reported, not fatal
	r.stop = time.Since(t1)
	t1 = time.Now()
	if b, err = start(); err != nil {
		return r, err
	}
	r.nodeStart = time.Since(t1)
	if err := fetch(c.count / 3); err != nil {
		return r, err
	}
	r.nodeAnswer = time.Since(t1)
	r.listedCold, r.listedWarm = -1, -1
	for k := range 2 {
		if !c.list {
			break
		}
		t := time.Now()
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			return r, err
		}
		d, n := time.Since(t), len(listed.Groups()) // fewer than all if the node gave up on some
		if k == 0 {
			r.listCold, r.listedCold = d, n
		} else {
			r.listWarm, r.listedWarm = d, n
		}
	}
	stderrf("  node restart %s s, lists %s s and %s s\n", secs(r.nodeAnswer), secs(r.listCold), secs(r.listWarm))
	return r, nil
}

// freeAddr returns host:port with a port free now, for a node that must
// come back on the same address after a restart.
func freeAddr(host string) (string, error) {
	l, err := net.Listen("tcp", host+":0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
