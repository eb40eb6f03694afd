package node

// The chaos part of the admin API: the faults a node lets `skein chaos`
// (or anyone who reaches its admin listener) inject into it, when it opted
// in with chaos.enable. Without it every request that would inject a fault
// is refused with 403; reading and removing faults always work.
//
//	GET    /v1/node            who this node is: id, pid, addresses, data dir,
//	                           whether chaos is enabled
//	GET    /v1/faults          the injected actor faults
//	POST   /v1/faults          inject one: {"actor": "node/*/partitions/orders-*",
//	                           "kind": "panic"|"stop"|"delay"|"drop", "count": 3,
//	                           "delay": "250ms", "message": "Append", "after": false,
//	                           "for": "60s", "every": "5s", "rate": 0.2};
//	                           201 with the fault and its id, 400 if invalid
//	DELETE /v1/faults          remove every actor fault
//	DELETE /v1/faults/{id}     remove one; 404 if it is not set
//	GET    /v1/links           the network faults on this node's links
//	POST   /v1/links           {"peer": 2, "cut": true, "drop": 0.2, "delay": "200ms",
//	                           "jitter": "100ms", "for": "60s"}: messages this
//	                           node's actors send to node 2 are dropped or
//	                           delayed; with "both": true node 2 sets the same
//	                           on its side, asked over remoting (chaos_peer.go)
//	DELETE /v1/links           heal every link; DELETE /v1/links/{peer} one
//	                           (?both=true: and node {peer}'s side toward this node)
//	GET    /v1/clock           the clock's offset from the system's
//	POST   /v1/clock           {"offset": "90s"} or {"jump": "-30s"}, "for": "60s"
//	DELETE /v1/clock           back to the system's time
//	GET    /v1/disk            the disk fault, if any
//	POST   /v1/disk            {"fail": "writes"|"syncs"|"full", "for": "60s", "dir": LOG_DIR}
//	                           (dir: only that log dir's files; default the node's)
//	DELETE /v1/disk            the disk works again
//	DELETE /v1/chaos           heal everything above
//	POST   /v1/power-loss      the power goes out: what was written but not
//	                           synced since the node started is dropped,
//	                           and the node dies (SIGKILL) after answering
//	                           {"files": N, "dropped_bytes": B}
//	POST   /v1/pause           {"for": "10s"}: the node stops (SIGSTOP) for that
//	                           long, at most 10m, and continues; 202 before it
//	                           begins (pause.go)
//
// Every fault has a lifetime: "for", default 60s, at most 24h; it ends by
// itself then, with a line in the node's log, as it began with one. The
// metrics skein_chaos_faults_active and skein_chaos_faults_injected_total
// count them by type (actor, link, clock, disk).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/chaos"
	"github.com/skeinlog/skein/internal/vfs"
)

// defaultFaultLifetime is a fault's lifetime when the request names none:
// a forgotten fault must not outlive the experiment by much.
const defaultFaultLifetime = time.Minute

// The types of fault, as metrics and logs name them.
const (
	chaosActor = "actor"
	chaosLink  = "link"
	chaosClock = "clock"
	chaosDisk  = "disk"
)

var chaosTypes = []string{chaosActor, chaosLink, chaosClock, chaosDisk}

// chaosState is what the node keeps for its chaos API beyond actors.Faults
// and actors.Links: the clock's lifetime, the disk fault, and counters.
type chaosState struct {
	injected map[string]*atomic.Uint64 // by type; the map is fixed at start

	mu         sync.Mutex
	clockUntil time.Time  // zero: no lifetime (offset 0)
	clockGen   uint64     // bumped by each change, so that an old timer does nothing (endAfter)
	disk       chaos.Disk // Fail empty: no fault
	diskGen    uint64
}

// endAfter arms the end of a fault just set (the caller holds c.mu): end
// runs, under c.mu, after d, unless the fault was set again or healed
// since, either of which bumps gen.
func (c *chaosState) endAfter(gen *uint64, d time.Duration, end func()) {
	*gen++
	mine := *gen
	time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if *gen == mine {
			end()
		}
	})
}

func newChaosState() *chaosState {
	c := &chaosState{injected: map[string]*atomic.Uint64{}}
	for _, t := range chaosTypes {
		c.injected[t] = &atomic.Uint64{}
	}
	return c
}

// diskFault is the node's disk injector (an ErrorFS under the descriptor
// cache, and the data directory's syncfs); mode is off (0) or the failing
// op set.
//
// It also keeps what a power outage would lose: for each file written
// since the node started, the size it had at its last sync (its own, or
// the data directory's syncfs). PowerLoss cuts every file written since
// back to that size. It models the data of unsynced writes, not directory
// entries: a file created and never synced comes back empty rather than
// gone, which the logs' recovery treats alike.
type diskFault struct {
	mode atomic.Int32
	// dir, when set, confines the fault to the paths under it (a log
	// dir): the others, and the syncfs rounds, are not failed.
	dir atomic.Pointer[string]

	mu     sync.Mutex
	synced map[string]int64 // path → bytes synced, for files written since their last sync
}

const (
	diskOff int32 = iota
	diskWrites
	diskSyncs
	diskFull
	diskFrozen // a power loss is under way: nothing reaches the disk any more
)

var diskModes = map[string]int32{"writes": diskWrites, "syncs": diskSyncs, "full": diskFull}

// MaybeError fails writes (EIO), syncs (EIO), or, for a full disk, creates,
// writes and space reservations (ENOSPC), as the kernel would. It notes
// the writes and syncs it lets through, for PowerLoss.
func (d *diskFault) MaybeError(op vfs.Op, path string) error {
	if err := d.failAt(op, path); err != nil {
		return err
	}
	switch op {
	case vfs.OpCreate, vfs.OpWrite, vfs.OpTruncate:
		d.written(path, op == vfs.OpCreate)
	case vfs.OpSync:
		// The size before the sync is a lower bound of what it makes
		// durable: the writes before it returned are in.
		d.mu.Lock()
		if _, ok := d.synced[path]; ok {
			if fi, err := os.Stat(path); err == nil {
				d.synced[path] = fi.Size()
			}
		}
		d.mu.Unlock()
	}
	return nil
}

// written notes a write to path: its first since a sync records the size
// it had, all of which was on disk (or is what the node found there).
func (d *diskFault) written(path string, created bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.synced[path]; ok {
		return
	}
	if d.synced == nil {
		d.synced = map[string]int64{}
	}
	var size int64
	if fi, err := os.Stat(path); err == nil && !created {
		size = fi.Size()
	}
	d.synced[path] = size
}

// syncedAll runs a sync of the whole filesystem (syncfs): on success, what
// every file held before it is durable.
func (d *diskFault) syncedAll(sync func() error) error {
	d.mu.Lock()
	sizes := make(map[string]int64, len(d.synced))
	for path := range d.synced {
		if fi, err := os.Stat(path); err == nil {
			sizes[path] = fi.Size()
		}
	}
	d.mu.Unlock()
	if err := sync(); err != nil {
		return err
	}
	d.mu.Lock()
	for path, size := range sizes {
		if _, ok := d.synced[path]; ok {
			d.synced[path] = max(d.synced[path], size)
		}
	}
	d.mu.Unlock()
	return nil
}

// PowerLoss freezes the disk (every operation fails from now on) and cuts
// every file written since the node started back to the size it had at
// its last sync; it returns how many bytes it dropped. The caller kills
// the process next: nothing it does after this reaches the disk.
func (d *diskFault) PowerLoss() (files int, dropped int64) {
	d.mode.Store(diskFrozen)
	d.mu.Lock()
	defer d.mu.Unlock()
	for path, size := range d.synced {
		fi, err := os.Stat(path)
		if err != nil || fi.Size() <= size {
			continue
		}
		if os.Truncate(path, size) == nil {
			files++
			dropped += fi.Size() - size
		}
	}
	return files, dropped
}

// failAt is fail for an operation on path; "" is the whole filesystem
// (a syncfs round), outside any log dir the fault is confined to.
func (d *diskFault) failAt(op vfs.Op, path string) error {
	if dir := d.dir.Load(); dir != nil && d.mode.Load() != diskFrozen {
		if path == "" || path != *dir && !strings.HasPrefix(path, *dir+string(filepath.Separator)) {
			return nil
		}
	}
	return d.fail(op)
}

func (d *diskFault) fail(op vfs.Op) error {
	switch d.mode.Load() {
	case diskFrozen:
		return syscall.EIO
	case diskWrites:
		if op == vfs.OpWrite || op == vfs.OpTruncate || op == vfs.OpAllocate {
			return syscall.EIO
		}
	case diskSyncs:
		if op == vfs.OpSync {
			return syscall.EIO
		}
	case diskFull:
		if op == vfs.OpWrite || op == vfs.OpCreate || op == vfs.OpAllocate {
			return syscall.ENOSPC
		}
	}
	return nil
}

// chaosRoutes adds the chaos API to mux.
func (a *adminServer) chaosRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/node", a.nodeInfo)
	mux.HandleFunc("GET /v1/faults", a.listFaults)
	mux.HandleFunc("POST /v1/faults", a.chaos(a.addFault))
	mux.HandleFunc("DELETE /v1/faults", a.clearFaults)
	mux.HandleFunc("DELETE /v1/faults/{id}", a.removeFault)
	mux.HandleFunc("GET /v1/links", a.listLinks)
	mux.HandleFunc("POST /v1/links", a.chaos(a.setLink))
	mux.HandleFunc("DELETE /v1/links", a.healLinks)
	mux.HandleFunc("DELETE /v1/links/{peer}", a.healLink)
	mux.HandleFunc("GET /v1/clock", a.getClock)
	mux.HandleFunc("POST /v1/clock", a.chaos(a.setClock))
	mux.HandleFunc("DELETE /v1/clock", a.resetClock)
	mux.HandleFunc("GET /v1/disk", a.getDisk)
	mux.HandleFunc("POST /v1/disk", a.chaos(a.setDisk))
	mux.HandleFunc("DELETE /v1/disk", a.healDisk)
	mux.HandleFunc("DELETE /v1/chaos", a.healAll)
	mux.HandleFunc("POST /v1/power-loss", a.chaos(a.powerLoss))
	mux.HandleFunc("POST /v1/pause", a.chaos(a.pause))
}

// chaos refuses h's requests on a node without chaos.enable.
func (a *adminServer) chaos(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.n.cfg.ChaosEnable {
			writeError(w, http.StatusForbidden, "chaos is not enabled on this node: start it with chaos.enable=true to let faults be injected")
			return
		}
		h(w, r)
	}
}

// decodeBody reads exactly one JSON value of the admin API into v.
func decodeBody(w http.ResponseWriter, r *http.Request, what string, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the %s: %v", what, err))
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("reading the %s: more than one JSON value", what))
		return false
	}
	return true
}

// parseDuration parses a request's Go duration ("250ms") named name into
// d, leaving d alone when s is empty.
func parseDuration(w http.ResponseWriter, name, s string, d *time.Duration) bool {
	if s == "" {
		return true
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: %v", name, err))
		return false
	}
	*d = v
	return true
}

// lifetime is a request's "for": the default when absent, refused past
// actors.MaxFaultLifetime or below zero.
func lifetime(w http.ResponseWriter, s string) (time.Duration, bool) {
	d := defaultFaultLifetime
	if s != "" {
		var err error
		if d, err = time.ParseDuration(s); err != nil || d <= 0 || d > actors.MaxFaultLifetime {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("for: %q is not a duration in (0, %v]", s, actors.MaxFaultLifetime))
			return 0, false
		}
	}
	return d, true
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (a *adminServer) nodeInfo(w http.ResponseWriter, _ *http.Request) {
	// The log dirs as data.dir lists them, made absolute.
	dir := strings.Join(a.n.logDirs.Dirs(), ",")
	writeJSON(w, http.StatusOK, chaos.NodeInfo{Node: a.n.cfg.NodeID, PID: os.Getpid(), Incarnation: a.n.incarnation,
		Kafka: a.n.Addr().String(), Cluster: a.n.cfg.ClusterAdvertise, DataDir: dir, Chaos: a.n.cfg.ChaosEnable})
}

func toJSON(f actors.Fault) chaos.Fault {
	j := chaos.Fault{ID: f.ID, Actor: f.Actor, Kind: string(f.Kind), Message: f.Message, Count: f.Count, After: f.After,
		Rate: f.Rate, Expires: rfc3339(f.Expires), Fired: f.Fired}
	for _, d := range []struct {
		d time.Duration
		s *string
	}{{f.Delay, &j.Delay}, {f.For, &j.For}, {f.Every, &j.Every}} {
		if d.d > 0 {
			*d.s = d.d.String()
		}
	}
	return j
}

func (a *adminServer) listFaults(w http.ResponseWriter, _ *http.Request) {
	list := a.n.faults.List()
	out := make([]chaos.Fault, len(list))
	for i, f := range list {
		out[i] = toJSON(f)
	}
	writeJSON(w, http.StatusOK, struct {
		Faults []chaos.Fault `json:"faults"`
	}{out})
}

func (a *adminServer) addFault(w http.ResponseWriter, r *http.Request) {
	var j chaos.Fault
	if !decodeBody(w, r, "fault", &j) {
		return
	}
	f := actors.Fault{Actor: j.Actor, Kind: actors.FaultKind(j.Kind), Message: j.Message, Count: j.Count, After: j.After, Rate: j.Rate}
	if !parseDuration(w, "delay", j.Delay, &f.Delay) || !parseDuration(w, "every", j.Every, &f.Every) {
		return
	}
	var ok bool
	if f.For, ok = lifetime(w, j.For); !ok {
		return
	}
	added, err := a.n.faults.Add(f)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	a.n.chaos.injected[chaosActor].Add(1)
	a.n.log.Warn().Uint64("fault", added.ID).Str("actor", added.Actor).Str("kind", string(added.Kind)).
		Int("count", added.Count).Str("message_type", added.Message).Dur("delay", added.Delay).Bool("after", added.After).
		Dur("for", added.For).Dur("every", added.Every).Float64("rate", added.Rate).
		Msg("chaos: actor fault injected")
	writeJSON(w, http.StatusCreated, toJSON(added))
}

func (a *adminServer) clearFaults(w http.ResponseWriter, _ *http.Request) {
	n := a.n.faults.Clear()
	if n > 0 {
		a.n.log.Warn().Int("faults", n).Msg("chaos: actor faults removed")
	}
	writeRemoved(w, n)
}

func (a *adminServer) removeFault(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fault id %q: not a number", r.PathValue("id")))
		return
	}
	if !a.n.faults.Remove(id) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault %d", id))
		return
	}
	a.n.log.Warn().Uint64("fault", id).Msg("chaos: actor fault removed")
	writeRemoved(w, 1)
}

func writeRemoved(w http.ResponseWriter, n int) {
	writeJSON(w, http.StatusOK, struct {
		Removed int `json:"removed"`
	}{n})
}

// peerAddr is the remoting address of node id, from the image.
func (n *Node) peerAddr(id int32) (string, error) {
	if id == n.cfg.NodeID {
		return "", fmt.Errorf("node %d is this node: a link joins two nodes", id)
	}
	b, ok := n.image.Load().Brokers[id]
	if !ok || b.ClusterAddr == "" {
		return "", fmt.Errorf("no node %d with a cluster address in this node's metadata", id)
	}
	return b.ClusterAddr, nil
}

// peerOf is the node id whose remoting address is addr, or -1.
func (n *Node) peerOf(addr string) int32 {
	for id, b := range n.image.Load().Brokers {
		if b.ClusterAddr == addr {
			return id
		}
	}
	return -1
}

func (a *adminServer) listLinks(w http.ResponseWriter, _ *http.Request) {
	out := []chaos.Link{}
	for addr, f := range a.n.links.List() {
		j := chaos.Link{Peer: a.n.peerOf(addr), Address: addr, Cut: f.Cut, Drop: f.DropRate, Expires: rfc3339(f.Expires)}
		if f.Delay > 0 {
			j.Delay = f.Delay.String()
		}
		if f.Jitter > 0 {
			j.Jitter = f.Jitter.String()
		}
		if f.For > 0 {
			j.For = f.For.String()
		}
		out = append(out, j)
	}
	writeJSON(w, http.StatusOK, struct {
		Links []chaos.Link `json:"links"`
	}{out})
}

func (a *adminServer) setLink(w http.ResponseWriter, r *http.Request) {
	var j chaos.Link
	if !decodeBody(w, r, "link fault", &j) {
		return
	}
	addr, err := a.n.peerAddr(j.Peer)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	f := actors.LinkFault{Cut: j.Cut, DropRate: j.Drop}
	if !parseDuration(w, "delay", j.Delay, &f.Delay) || !parseDuration(w, "jitter", j.Jitter, &f.Jitter) {
		return
	}
	var ok bool
	if f.For, ok = lifetime(w, j.For); !ok {
		return
	}
	switch {
	case f.DropRate < 0 || f.DropRate > 1:
		err = fmt.Errorf("drop %v is not a fraction in [0, 1]", f.DropRate)
	case f.Delay < 0 || f.Delay > actors.MaxFaultDelay || f.Jitter < 0 || f.Jitter > actors.MaxFaultDelay:
		err = fmt.Errorf("delay and jitter must be in [0, %v]", actors.MaxFaultDelay)
	case !f.Cut && f.DropRate == 0 && f.Delay == 0 && f.Jitter == 0:
		err = errors.New("the fault does nothing: set cut, drop, delay or jitter")
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if j.Both {
		// The peer first, while the link still carries the request.
		pf := &PeerLinkFault{Cut: f.Cut, Drop: f.DropRate, Delay: f.Delay, Jitter: f.Jitter, For: f.For}
		if err := a.n.askPeerLink(j.Peer, pf); err != nil {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("node %d did not set its side of the link: %v", j.Peer, err))
			return
		}
	}
	f = a.n.links.Set(addr, f)
	a.n.chaos.injected[chaosLink].Add(1)
	a.n.log.Warn().Int32("peer", j.Peer).Str("address", addr).Bool("cut", f.Cut).Float64("drop", f.DropRate).
		Dur("delay", f.Delay).Dur("jitter", f.Jitter).Dur("for", f.For).Msg("chaos: link fault injected")
	j.Address, j.For, j.Expires = addr, f.For.String(), rfc3339(f.Expires)
	writeJSON(w, http.StatusCreated, j)
}

func (a *adminServer) healLinks(w http.ResponseWriter, _ *http.Request) {
	n := a.n.links.Heal()
	if n > 0 {
		a.n.log.Warn().Int("links", n).Msg("chaos: link faults removed")
	}
	writeRemoved(w, n)
}

func (a *adminServer) healLink(w http.ResponseWriter, r *http.Request) {
	peer, err := strconv.ParseInt(r.PathValue("peer"), 10, 32)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("peer %q: not a node id", r.PathValue("peer")))
		return
	}
	addr, err := a.n.peerAddr(int32(peer))
	removed := err == nil && a.n.links.Remove(addr)
	if removed {
		a.n.log.Warn().Int64("peer", peer).Msg("chaos: link fault removed")
	}
	if err == nil && r.URL.Query().Get("both") == "true" {
		// The peer after this side, so that the request gets through.
		if err := a.n.askPeerLink(int32(peer), &PeerLinkFault{Heal: true}); err != nil {
			writeError(w, http.StatusBadGateway, fmt.Sprintf("node %d did not heal its side of the link: %v", peer, err))
			return
		}
		writeRemoved(w, 2)
		return
	}
	if !removed {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no fault on the link to node %d", peer))
		return
	}
	writeRemoved(w, 1)
}

func (a *adminServer) clockNow() chaos.Clock {
	a.n.chaos.mu.Lock()
	until := a.n.chaos.clockUntil
	a.n.chaos.mu.Unlock()
	return chaos.Clock{Offset: a.n.clock.Offset().String(), Expires: rfc3339(until), Now: rfc3339(a.n.clock.Now())}
}

func (a *adminServer) getClock(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, a.clockNow())
}

func (a *adminServer) setClock(w http.ResponseWriter, r *http.Request) {
	var j chaos.Clock
	if !decodeBody(w, r, "clock fault", &j) {
		return
	}
	var offset, jump time.Duration
	if (j.Offset == "") == (j.Jump == "") {
		writeError(w, http.StatusBadRequest, "give one of offset (the clock's distance from the system's) and jump (a step from where it is)")
		return
	}
	if !parseDuration(w, "offset", j.Offset, &offset) || !parseDuration(w, "jump", j.Jump, &jump) {
		return
	}
	d, ok := lifetime(w, j.For)
	if !ok {
		return
	}
	c := a.n.chaos
	c.mu.Lock()
	if j.Offset != "" {
		a.n.clock.SetOffset(offset)
	} else {
		a.n.clock.Jump(jump)
	}
	c.clockUntil = time.Now().Add(d)
	c.endAfter(&c.clockGen, d, func() {
		a.n.clock.SetOffset(0)
		c.clockUntil = time.Time{}
		a.n.log.Warn().Msg("chaos: clock fault ended; the node's clock is the system's again")
	})
	c.mu.Unlock()
	c.injected[chaosClock].Add(1)
	a.n.log.Warn().Dur("offset", a.n.clock.Offset()).Dur("for", d).Msg("chaos: clock fault injected")
	writeJSON(w, http.StatusOK, a.clockNow())
}

func (a *adminServer) resetClock(w http.ResponseWriter, _ *http.Request) {
	writeRemoved(w, a.n.healClock())
}

// healClock sets the clock's offset back to 0; it reports 1 if it was not.
func (n *Node) healClock() int {
	n.chaos.mu.Lock()
	defer n.chaos.mu.Unlock()
	n.chaos.clockGen++
	n.chaos.clockUntil = time.Time{}
	if n.clock.Offset() == 0 {
		return 0
	}
	n.clock.SetOffset(0)
	n.log.Warn().Msg("chaos: clock fault removed; the node's clock is the system's again")
	return 1
}

func (a *adminServer) getDisk(w http.ResponseWriter, _ *http.Request) {
	a.n.chaos.mu.Lock()
	d := a.n.chaos.disk
	a.n.chaos.mu.Unlock()
	writeJSON(w, http.StatusOK, d)
}

func (a *adminServer) setDisk(w http.ResponseWriter, r *http.Request) {
	var j chaos.Disk
	if !decodeBody(w, r, "disk fault", &j) {
		return
	}
	mode, known := diskModes[j.Fail]
	if !known {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("fail: %q is not writes, syncs or full", j.Fail))
		return
	}
	var dir *string
	if j.Dir != "" {
		abs, err := filepath.Abs(j.Dir)
		if err != nil || !slices.Contains(a.n.logDirs.Dirs(), abs) {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("dir: %q is not one of the node's log dirs %v", j.Dir, a.n.logDirs.Dirs()))
			return
		}
		j.Dir, dir = abs, &abs
	}
	d, ok := lifetime(w, j.For)
	if !ok {
		return
	}
	c := a.n.chaos
	c.mu.Lock()
	a.n.disk.dir.Store(dir)
	a.n.disk.mode.Store(mode)
	j.For, j.Expires = d.String(), rfc3339(time.Now().Add(d))
	c.disk = j
	c.endAfter(&c.diskGen, d, func() {
		a.n.disk.mode.Store(diskOff)
		c.disk = chaos.Disk{}
		a.n.log.Warn().Str("fail", j.Fail).Msg("chaos: disk fault ended")
	})
	c.mu.Unlock()
	c.injected[chaosDisk].Add(1)
	a.n.log.Warn().Str("fail", j.Fail).Str("dir", j.Dir).Dur("for", d).Msg("chaos: disk fault injected")
	writeJSON(w, http.StatusCreated, j)
}

func (a *adminServer) healDisk(w http.ResponseWriter, _ *http.Request) {
	writeRemoved(w, a.n.healDisk())
}

// healDisk ends the disk fault; it reports 1 if there was one.
func (n *Node) healDisk() int {
	n.chaos.mu.Lock()
	defer n.chaos.mu.Unlock()
	n.chaos.diskGen++
	n.chaos.disk = chaos.Disk{}
	if n.disk.mode.Swap(diskOff) == diskOff {
		return 0
	}
	n.log.Warn().Msg("chaos: disk fault removed")
	return 1
}

func (a *adminServer) healAll(w http.ResponseWriter, _ *http.Request) {
	n := a.n.faults.Clear() + a.n.links.Heal() + a.n.healClock() + a.n.healDisk()
	if n > 0 {
		a.n.log.Warn().Int("faults", n).Msg("chaos: every fault removed")
	}
	writeRemoved(w, n)
}

// chaosCollector exports the faults active now and injected so far, by type.
type chaosCollector struct{ n *Node }

var (
	chaosActiveDesc = prometheus.NewDesc("skein_chaos_faults_active",
		"Injected faults active now, by type (actor, link, clock, disk).", []string{"type"}, nil)
	chaosInjectedDesc = prometheus.NewDesc("skein_chaos_faults_injected_total",
		"Faults injected through the admin API, by type (actor, link, clock, disk).", []string{"type"}, nil)
)

func (c chaosCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- chaosActiveDesc
	ch <- chaosInjectedDesc
}

func (c chaosCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	active := map[string]int{chaosActor: len(n.faults.List()), chaosLink: len(n.links.List())}
	if n.clock.Offset() != 0 {
		active[chaosClock] = 1
	}
	if n.disk.mode.Load() != diskOff {
		active[chaosDisk] = 1
	}
	for _, t := range chaosTypes {
		ch <- prometheus.MustNewConstMetric(chaosActiveDesc, prometheus.GaugeValue, float64(active[t]), t)
		ch <- prometheus.MustNewConstMetric(chaosInjectedDesc, prometheus.CounterValue, float64(n.chaos.injected[t].Load()), t)
	}
}

func (a *adminServer) powerLoss(w http.ResponseWriter, _ *http.Request) {
	files, dropped := a.n.disk.PowerLoss()
	a.n.log.Warn().Int("files", files).Int64("dropped_bytes", dropped).
		Msg("chaos: power loss: unsynced data dropped; the node dies now")
	writeJSON(w, http.StatusOK, struct {
		Files   int   `json:"files"`
		Dropped int64 `json:"dropped_bytes"`
	}{files, dropped})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
}
