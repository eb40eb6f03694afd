package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Nodes are the admin APIs of a cluster's nodes, by node id.
type Nodes struct {
	byID map[int32]*Admin
	info map[int32]NodeInfo
}

// Dial asks each admin address who it is, with access's scheme and
// credentials. A node that does not answer is an error: a fault command
// must not half-apply without saying so.
func Dial(ctx context.Context, addrs []string, access Access) (*Nodes, error) {
	ns := &Nodes{byID: map[int32]*Admin{}, info: map[int32]NodeInfo{}}
	var errs []error
	for _, addr := range addrs {
		a := &Admin{Addr: addr, Access: access, HTTP: access.Client(10 * time.Second)}
		info, err := a.Node(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, dup := ns.byID[info.Node]; dup {
			errs = append(errs, fmt.Errorf("%s and %s are both node %d", prev.Addr, addr, info.Node))
			continue
		}
		ns.byID[info.Node], ns.info[info.Node] = a, info
	}
	return ns, errors.Join(errs...)
}

// IDs returns the node ids, in order.
func (ns *Nodes) IDs() []int32 {
	ids := make([]int32, 0, len(ns.byID))
	for id := range ns.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Admin returns node id's admin client.
func (ns *Nodes) Admin(id int32) (*Admin, error) {
	a, ok := ns.byID[id]
	if !ok {
		return nil, fmt.Errorf("no node %d among the admin addresses given (nodes %v)", id, ns.IDs())
	}
	return a, nil
}

// Info returns what node id said of itself when dialled.
func (ns *Nodes) Info(id int32) NodeInfo { return ns.info[id] }

// Signals: a node on this host can be killed, paused and resumed by its
// pid. A paused node does not answer its admin API, so pausing records the
// pid in a file (by admin address) that resuming reads.

// local reports whether the admin address is on this host, so that the
// pid it gave is this host's.
func local(adminAddr string) bool {
	host, _, err := net.SplitHostPort(adminAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return false
		}
		ip = ips[0]
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// Signal sends sig to node id's process, which must run on this host.
func (ns *Nodes) Signal(id int32, sig syscall.Signal) error {
	a, err := ns.Admin(id)
	if err != nil {
		return err
	}
	if !local(a.Addr) {
		return fmt.Errorf("node %d (%s) is not on this host: signal it there", id, a.Addr)
	}
	return syscall.Kill(ns.info[id].PID, sig)
}

// pausedFile is where Pause records the pid of the node at adminAddr.
func pausedFile(adminAddr string) string {
	return filepath.Join(os.TempDir(), "skein-chaos-paused-"+strings.NewReplacer(":", "_", "/", "_").Replace(adminAddr))
}

// Pause stops node id's process (SIGSTOP) and records its pid for Resume.
func (ns *Nodes) Pause(id int32) error {
	a, err := ns.Admin(id)
	if err != nil {
		return err
	}
	if err := os.WriteFile(pausedFile(a.Addr), []byte(strconv.Itoa(ns.info[id].PID)), 0o600); err != nil {
		return err
	}
	return ns.Signal(id, syscall.SIGSTOP)
}

// Resume continues the process paused at adminAddr (SIGCONT): it need not
// answer, being paused, so the pid comes from Pause's record.
func Resume(adminAddr string) error {
	path := pausedFile(adminAddr)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no node at %s was paused by skein chaos on this host", adminAddr)
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return os.Remove(path)
}
