package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// scenario is a named pattern of faults, from the reliability literature
// (Jepsen's Kafka and Redpanda analyses, Kafka's system tests). Its run
// applies faults until ctx ends, ending each before the next; the run heals
// whatever is left.
type scenario struct {
	name, about string
	// local: it kills, pauses or restarts node processes.
	local    bool
	minNodes int
	// settings are node settings it needs (--set k=v).
	settings []string
	run      func(ctx context.Context, r *run, w *workload)
}

var scenarios = map[string]*scenario{}

func register(s *scenario) {
	if s.minNodes == 0 {
		s.minNodes = 3
	}
	scenarios[s.name] = s
}

// ScenarioNames returns the scenarios' names, sorted.
func ScenarioNames() []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// About returns a scenario's one-line description.
func About(name string) string {
	if s, ok := scenarios[name]; ok {
		return s.about
	}
	return ""
}

func init() {
	register(&scenario{name: "leader-kill", local: true,
		about: "kill -9 the leader of a partition every few seconds, restart it a few seconds later",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				id := r.leader(ctx)
				r.fault("kill -9 node %d (a partition leader)", id)
				r.local.kill(id)
				r.recovered(ctx, time.Now())
				r.restart(ctx, id)
			}
		}})
	register(&scenario{name: "bounce", local: true,
		about: "clean (SIGTERM) and hard (SIGKILL) bounces of brokers and of the active controller, one at a time",
		run: func(ctx context.Context, r *run, _ *workload) {
			for i := 0; sleep(ctx, r.between(time.Second, 3*time.Second)); i++ {
				id, what := r.pick(r.nodes), "a broker"
				if i%2 == 1 {
					id, what = r.controller(ctx), "the active controller"
				}
				since := time.Now()
				if r.rng.IntN(2) == 0 {
					r.fault("clean bounce of node %d (%s)", id, what)
					if err := r.local.stop(id); err != nil {
						r.logf("%v", err)
					}
				} else {
					r.fault("hard bounce of node %d (%s)", id, what)
					r.local.kill(id)
				}
				r.restart(ctx, id)
				r.recovered(ctx, since)
			}
		}})
	register(&scenario{name: "zombie", local: true,
		about: "pause a leader (SIGSTOP) past the broker session timeout, then resume it: it must not serve stale writes",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				id := r.leader(ctx)
				r.fault("pause node %d (a partition leader) past its session", id)
				since := time.Now()
				r.local.pause(id)
				r.recovered(ctx, since)
				sleep(ctx, r.between(time.Second, 3*time.Second))
				r.logf("resume node %d", id)
				r.local.resume(id)
			}
		}})
	register(&scenario{name: "follower-pause", local: true,
		about: "pause a follower for a few seconds at a time, under min.insync.replicas=2",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				leader := r.leader(ctx)
				id := r.pick(r.others(leader))
				r.fault("pause node %d (a follower of node %d)", id, leader)
				r.local.pause(id)
				sleep(ctx, r.between(2*time.Second, 6*time.Second))
				r.logf("resume node %d", id)
				r.local.resume(id)
			}
		}})
	register(&scenario{name: "isolate-leader",
		about: "cut a leader off from the other nodes (clients still reach it) for longer than its session, then heal",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				id := r.leader(ctx)
				r.fault("cut node %d (a partition leader) off from %v", id, r.others(id))
				since := time.Now()
				for _, o := range r.others(id) {
					r.link(ctx, id, o, Link{Cut: true})
					r.link(ctx, o, id, Link{Cut: true})
				}
				r.recovered(ctx, since)
				sleep(ctx, r.between(time.Second, 3*time.Second))
				r.logf("heal node %d's links", id)
				r.healNodes(ctx)
			}
		}})
	register(&scenario{name: "lossy",
		about: "lossy (10-30% dropped) and slow (5-50ms, jittered) links between random pairs of nodes",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(500*time.Millisecond, 2*time.Second)) {
				a := r.pick(r.nodes)
				b := r.pick(r.others(a))
				l := Link{Drop: 0.1 + 0.2*r.rng.Float64(), Delay: r.between(5*time.Millisecond, 50*time.Millisecond).String(),
					Jitter: r.between(time.Millisecond, 20*time.Millisecond).String()}
				r.fault("lossy link %d <-> %d: drop %.0f%%, delay %s, jitter %s", a, b, l.Drop*100, l.Delay, l.Jitter)
				r.link(ctx, a, b, l)
				r.link(ctx, b, a, l)
				sleep(ctx, r.between(3*time.Second, 8*time.Second))
				r.healNodes(ctx)
			}
		}})
	register(&scenario{name: "disk-full",
		about: "a follower's disk full for a few seconds, then a leader's",
		run: func(ctx context.Context, r *run, _ *workload) {
			for i := 0; sleep(ctx, r.between(time.Second, 3*time.Second)); i++ {
				leader := r.leader(ctx)
				id, what := r.pick(r.others(leader)), "a follower"
				if i%2 == 1 {
					id, what = leader, "a partition leader"
				}
				r.fault("disk full on node %d (%s)", id, what)
				since := time.Now()
				r.disk(ctx, id, "full")
				sleep(ctx, r.between(3*time.Second, 6*time.Second))
				r.logf("disk space back on node %d", id)
				r.healNodes(ctx)
				r.recovered(ctx, since)
			}
		}})
	register(&scenario{name: "torn-tail", local: true,
		about: "kill -9 a node, truncate or garble the tail of one of its segments, restart it",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				id := r.pick(r.nodes)
				r.local.kill(id)
				what := r.tearTail(id)
				r.fault("kill -9 node %d, %s", id, what)
				since := time.Now()
				r.restart(ctx, id)
				r.recovered(ctx, since)
			}
		}})
	register(&scenario{name: "power-loss", local: true,
		about: "the power goes out on one node, then on every node at once: what was written but not synced is lost (under durability fsync, nothing acknowledged)",
		run: func(ctx context.Context, r *run, _ *workload) {
			for i := 0; sleep(ctx, r.between(time.Second, 3*time.Second)); i++ {
				victims, what := []int32{r.pick(r.nodes)}, "one node"
				if i%2 == 1 {
					victims, what = r.nodes, "every node"
				}
				r.fault("power loss on %s: %v", what, victims)
				since := time.Now()
				var wg sync.WaitGroup
				for _, id := range victims {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if err := r.local.powerLoss(ctx, id); err != nil {
							r.logf("power loss on node %d: %v", id, err)
						}
					}()
				}
				wg.Wait()
				r.restart(ctx, victims...)
				r.recovered(ctx, since)
			}
		}})
	register(&scenario{name: "reassign", local: true, minNodes: 4,
		about: "partitions moved to other nodes (replicas added, caught up, removed) while nodes are killed and restarted, on four nodes",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				p := r.rng.Int32N(r.cfg.Partitions)
				to := slices.Clone(r.nodes)
				r.rng.Shuffle(len(to), func(i, j int) { to[i], to[j] = to[j], to[i] })
				to = to[:3]
				r.fault("reassign %s-%d to %v", plainTopic, p, to)
				var req kadm.AlterPartitionAssignmentsReq
				req.Assign(plainTopic, p, to)
				actx, cancel := context.WithTimeout(ctx, 10*time.Second)
				res, err := kadm.NewClient(r.cl).AlterPartitionAssignments(actx, req)
				cancel()
				if err == nil {
					err = res.Error()
				}
				if err != nil {
					r.logf("reassigning: %v", err)
				}
				// Half the time a node dies while the partition moves.
				if r.rng.IntN(2) == 0 {
					id := r.pick(r.nodes)
					r.fault("kill -9 node %d during the move", id)
					r.local.kill(id)
					sleep(ctx, r.between(time.Second, 3*time.Second))
					r.restart(ctx, id)
				}
				r.until(ctx, 30*time.Second, "the move to end", func() bool {
					lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
					defer cancel()
					moving, err := kadm.NewClient(r.cl).ListPartitionReassignments(lctx, kadm.TopicsSet{plainTopic: {p: {}}})
					return err == nil && len(moving[plainTopic]) == 0
				})
			}
		}})
	register(&scenario{name: "clock-skew",
		about: "nodes' clocks set apart (up to two minutes either way) and stepped, one node at a time",
		run: func(ctx context.Context, r *run, _ *workload) {
			for sleep(ctx, r.between(time.Second, 3*time.Second)) {
				id := r.pick(r.nodes)
				c := Clock{Offset: r.between(-2*time.Minute, 2*time.Minute).Truncate(time.Second).String()}
				if r.rng.IntN(2) == 0 {
					c = Clock{Jump: r.between(-30*time.Second, 30*time.Second).Truncate(time.Second).String()}
				}
				r.fault("clock of node %d: offset %q jump %q", id, c.Offset, c.Jump)
				r.clock(ctx, id, c)
				sleep(ctx, r.between(2*time.Second, 5*time.Second))
			}
		}})
	register(&scenario{name: "actor-panics",
		about: "panics at a steady rate in every kind of actor: partitions, fetchers, groups, transaction coordinators, the controller, metadata",
		run: func(ctx context.Context, r *run, _ *workload) {
			for _, id := range r.nodes {
				for _, actor := range []string{"partitions/*", "fetchers/*", "groups/*", "txns/*", "controller", "metadata", "appends"} {
					f := Fault{Actor: fmt.Sprintf("node/%d/%s", id, actor), Kind: "panic", Every: r.between(2*time.Second, 4*time.Second).String(),
						For: (r.cfg.Duration + time.Second).String()}
					if _, err := r.admin[id].AddFault(ctx, f); err != nil {
						r.logf("node %d: %v", id, err)
						continue
					}
					r.fault("panic in node/%d/%s every %s", id, actor, f.Every)
				}
			}
			<-ctx.Done()
		}})
	register(&scenario{name: "group-churn",
		about: "consumer group members join and leave, and group coordinators fail, all the time",
		run: func(ctx context.Context, r *run, w *workload) {
			for sleep(ctx, r.between(500*time.Millisecond, 2*time.Second)) {
				switch r.rng.IntN(3) {
				case 0:
					if err := w.join(); err == nil {
						r.fault("a member joins the group")
					}
				case 1:
					if w.leave() {
						r.fault("a member leaves the group")
					}
				case 2:
					id := r.pick(r.nodes)
					if _, err := r.admin[id].AddFault(ctx, Fault{Actor: fmt.Sprintf("node/%d/groups/*", id), Kind: "panic"}); err == nil {
						r.fault("panic in a group coordinator of node %d", id)
					}
				}
			}
		}})
	register(&scenario{name: "mixed", local: true,
		about: "a rotation of the other scenarios, a few seconds each",
		run: func(ctx context.Context, r *run, w *workload) {
			var names []string
			for _, n := range ScenarioNames() {
				if n != "mixed" {
					names = append(names, n)
				}
			}
			for i := r.rng.IntN(len(names)); ctx.Err() == nil; i++ {
				s := scenarios[names[i%len(names)]]
				r.logf("-- %s", s.name)
				sctx, cancel := context.WithTimeout(ctx, r.between(8*time.Second, 15*time.Second))
				s.run(sctx, r, w)
				cancel()
				r.endFaults(ctx)
			}
		}})
}

// restart starts the nodes again and waits until they are ready (a node
// that does not come back is logged; the heal tries again). All start
// before any is waited for: a quorum may need several.
func (r *run) restart(ctx context.Context, ids ...int32) {
	var started []int32
	for _, id := range ids {
		if err := r.local.start(id); err != nil {
			r.logf("restarting node %d: %v", id, err)
			continue
		}
		started = append(started, id)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, id := range started {
		if err := r.local.waitReady(rctx, id); err != nil {
			if ctx.Err() == nil {
				r.logf("node %d: %v", id, err)
			}
			continue
		}
		r.logf("node %d restarted", id)
	}
}

// link sets a fault on from's link to to.
func (r *run) link(ctx context.Context, from, to int32, l Link) {
	l.Peer = to
	l.For = (2 * r.cfg.Duration).String()
	if err := r.admin[from].SetLink(ctx, l); err != nil {
		r.logf("link %d -> %d: %v", from, to, err)
	}
}

// disk sets node id's disk fault.
func (r *run) disk(ctx context.Context, id int32, fail string) {
	if err := r.admin[id].SetDisk(ctx, Disk{Fail: fail, For: (2 * r.cfg.Duration).String()}); err != nil {
		r.logf("disk of node %d: %v", id, err)
	}
}

// clock sets node id's clock fault.
func (r *run) clock(ctx context.Context, id int32, c Clock) {
	c.For = (2 * r.cfg.Duration).String()
	if _, err := r.admin[id].SetClock(ctx, c); err != nil {
		r.logf("clock of node %d: %v", id, err)
	}
}

// endFaults ends whatever faults a scenario left: paused nodes resume,
// stopped ones start again (all before any is waited for: a quorum may
// need several), and every node's injected faults are removed.
func (r *run) endFaults(ctx context.Context) {
	if r.local != nil {
		var down []int32
		for _, id := range r.nodes {
			switch {
			case r.local.paused(id):
				r.local.resume(id)
			case !r.local.running(id):
				down = append(down, id)
			}
		}
		r.restart(ctx, down...)
	}
	r.healNodes(ctx)
}

// healNodes removes every injected fault of every node that answers.
func (r *run) healNodes(ctx context.Context) {
	for _, id := range r.nodes {
		hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		r.admin[id].Heal(hctx)
		cancel()
	}
}

// tearTail damages the end of the newest segment of a random workload
// partition in node id's data directory (the node is down): it cuts a
// random number of bytes off, or overwrites them with garbage, as a crash
// mid-write leaves a file. It says what it did.
func (r *run) tearTail(id int32) string {
	dirs, _ := filepath.Glob(filepath.Join(r.local.dataDir(id), plainTopic+"-*"))
	if len(dirs) == 0 {
		return "no partition to tear"
	}
	dir := dirs[r.rng.IntN(len(dirs))]
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(logs) == 0 {
		return "no segment to tear in " + filepath.Base(dir)
	}
	slices.Sort(logs)
	seg := logs[len(logs)-1]
	fi, err := os.Stat(seg)
	if err != nil || fi.Size() == 0 {
		return "an empty segment in " + filepath.Base(dir)
	}
	n := 1 + r.rng.Int64N(min(fi.Size(), 4096))
	name := filepath.Join(filepath.Base(dir), filepath.Base(seg))
	if r.rng.IntN(2) == 0 {
		if err := os.Truncate(seg, fi.Size()-n); err != nil {
			return fmt.Sprintf("truncating %s failed: %v", name, err)
		}
		return fmt.Sprintf("%d bytes cut off the end of %s", n, name)
	}
	f, err := os.OpenFile(seg, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Sprintf("garbling %s failed: %v", name, err)
	}
	defer f.Close()
	junk := make([]byte, n)
	for i := range junk {
		junk[i] = byte(r.rng.UintN(256))
	}
	if _, err := f.WriteAt(junk, fi.Size()-n); err != nil {
		return fmt.Sprintf("garbling %s failed: %v", name, err)
	}
	return fmt.Sprintf("the last %d bytes of %s garbled", n, name)
}
