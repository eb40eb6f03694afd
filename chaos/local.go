package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The ports of a local cluster's nodes, each node on a host (address) of
// its own, so that a restarted node comes back where its peers and
// clients know it.
const (
	localKafkaPort   = 9092
	localClusterPort = 9093
	localAdminPort   = 9644
)

// local is a cluster of `skein node` processes on this host that a run
// started and may kill, stop, pause and restart.
type localCluster struct {
	bin      string
	dir      string
	hosts    []string // by node id - 1
	settings []string // --set k=v for every node

	mu    sync.Mutex
	procs map[int32]*proc
}

type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
	ended  bool // the run killed or stopped it: any other exit is a crash
}

func (l *localCluster) ids() []int32 {
	ids := make([]int32, len(l.hosts))
	for i := range ids {
		ids[i] = int32(i + 1)
	}
	return ids
}

func (l *localCluster) host(id int32) string { return l.hosts[id-1] }

func (l *localCluster) kafkaAddr(id int32) string {
	return fmt.Sprintf("%s:%d", l.host(id), localKafkaPort)
}

func (l *localCluster) adminAddr(id int32) string {
	return fmt.Sprintf("%s:%d", l.host(id), localAdminPort)
}

func (l *localCluster) dataDir(id int32) string {
	return filepath.Join(l.dir, fmt.Sprintf("node%d", id), "data")
}

func (l *localCluster) logPath(id int32) string {
	return filepath.Join(l.dir, fmt.Sprintf("node%d.log", id))
}

func (l *localCluster) voters() string {
	var vs []string
	for _, id := range l.ids() {
		vs = append(vs, fmt.Sprintf("%d@%s:%d", id, l.host(id), localClusterPort))
	}
	return strings.Join(vs, ",")
}

// start runs node id's process, appending its output to its log.
func (l *localCluster) start(id int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.procs[id]; p != nil && p.running() {
		return fmt.Errorf("node %d is already running", id)
	}
	logf, err := os.OpenFile(l.logPath(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the child has its own descriptor
	args := []string{"node",
		"--node-id", strconv.Itoa(int(id)),
		"--data-dir", l.dataDir(id),
		"--listen", l.kafkaAddr(id),
		"--admin-listen", l.adminAddr(id),
		"--controller-quorum", l.voters(),
		"--cluster-listen", fmt.Sprintf("%s:%d", l.host(id), localClusterPort),
		"--log-format", "json",
		"--set", "chaos.enable=true",
	}
	for _, s := range l.settings {
		args = append(args, "--set", s)
	}
	cmd := exec.Command(l.bin, args...)
	// The user's SKEIN_* settings are for their own nodes, not these.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SKEIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	if l.procs == nil {
		l.procs = map[int32]*proc{}
	}
	l.procs[id] = p
	return nil
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (l *localCluster) proc(id int32) *proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.procs[id]
}

// running reports whether node id's process is alive (paused or not).
func (l *localCluster) running(id int32) bool {
	p := l.proc(id)
	return p != nil && p.running()
}

// signal sends sig to node id and, for SIGKILL and SIGTERM, waits until it
// is gone (a SIGTERM'd node stops gracefully, within wait; then it is
// killed).
func (l *localCluster) signal(id int32, sig syscall.Signal, wait time.Duration) error {
	p := l.proc(id)
	if p == nil || !p.running() {
		return fmt.Errorf("node %d is not running", id)
	}
	if p.paused && sig != syscall.SIGCONT {
		// A stopped process handles no SIGTERM; a killed one must not be
		// left stopped in its group either.
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
	if sig == syscall.SIGKILL || sig == syscall.SIGTERM {
		p.ended = true
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		return err
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
		return nil
	case syscall.SIGCONT:
		p.paused = false
		return nil
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(wait):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("node %d did not stop within %v of %v; killed", id, wait, sig)
	}
}

func (l *localCluster) kill(id int32) error { return l.signal(id, syscall.SIGKILL, time.Minute) }

// powerLoss makes node id lose its unsynced writes and die (it kills
// itself), and waits until it is gone.
func (l *localCluster) powerLoss(ctx context.Context, id int32) error {
	p := l.proc(id)
	if p == nil || !p.running() {
		return fmt.Errorf("node %d is not running", id)
	}
	p.ended = true
	if err := (&Admin{Addr: l.adminAddr(id)}).PowerLoss(ctx); err != nil {
		p.ended = false
		return err
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(time.Minute):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("node %d outlived its power loss; killed", id)
	}
}
func (l *localCluster) stop(id int32) error { return l.signal(id, syscall.SIGTERM, time.Minute) }
func (l *localCluster) pause(id int32) error {
	return l.signal(id, syscall.SIGSTOP, 0)
}
func (l *localCluster) resume(id int32) error { return l.signal(id, syscall.SIGCONT, 0) }

// paused reports whether node id is paused.
func (l *localCluster) paused(id int32) bool {
	p := l.proc(id)
	return p != nil && p.running() && p.paused
}

// crashed lists the nodes whose process ended without the run ending it.
func (l *localCluster) crashed() []int32 {
	var out []int32
	for _, id := range l.ids() {
		if p := l.proc(id); p != nil && !p.running() && !p.ended {
			out = append(out, id)
		}
	}
	return out
}

// close kills every node still running.
func (l *localCluster) close() {
	for _, id := range l.ids() {
		if l.running(id) {
			l.kill(id)
		}
	}
}

// waitReady waits until node id's /readyz answers 200.
func (l *localCluster) waitReady(ctx context.Context, id int32) error {
	a := &Admin{Addr: l.adminAddr(id)}
	for {
		ok, why := a.Ready(ctx)
		if ok {
			return nil
		}
		if !l.running(id) {
			return fmt.Errorf("node %d exited while starting; see %s", id, l.logPath(id))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %d not ready: %s (%w)", id, why, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errNotLocal is returned for node faults on a cluster the run did not
// start.
var errNotLocal = errors.New("this scenario kills, pauses or restarts nodes: it needs a local cluster (no --brokers)")
