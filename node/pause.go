package node

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// POST /v1/pause {"for": "10s"} pauses the node as SIGSTOP would, for
// that long (default 10 s, at most maxPause): the whole process stops,
// its listeners, actors and timers, and then continues where it was, as
// a process the kernel did not schedule for a while. It answers 202
// {"paused_for": "10s", "pid": P} before the pause begins.
//
// A process cannot wake itself, so the node starts a child of its own
// binary (os.Executable) with pauseEnv set, which stops its parent, waits
// and continues it: no shell nor any other program is needed, so it
// works in a FROM-scratch container. The child runs nothing but init
// below, in whatever binary includes this package (skein, the tests).

// pauseEnv tells a child of the node to pause its parent: its value is
// the pause in milliseconds. Not SKEIN_*, which the configuration reads.
const pauseEnv = "__SKEIN_PAUSE_PARENT_MS"

// maxPause bounds a pause: past it, the node's sessions with the
// controller, its clients and its peers have long expired anyway.
const maxPause = 10 * time.Minute

func init() {
	if v, ok := os.LookupEnv(pauseEnv); ok {
		os.Exit(pauseParent(v))
	}
}

// pauseParent stops the parent process, sleeps, and continues it.
func pauseParent(ms string) int {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 || time.Duration(n)*time.Millisecond > maxPause {
		return 2
	}
	parent := os.Getppid()
	if parent <= 1 {
		return 2
	}
	if err := syscall.Kill(parent, syscall.SIGSTOP); err != nil {
		return 1
	}
	time.Sleep(time.Duration(n) * time.Millisecond)
	// NB: continue even if the sleep was cut short: a parent left
	// stopped is a hung node.
	for syscall.Kill(parent, syscall.SIGCONT) != nil {
		if syscall.Kill(parent, 0) != nil {
			return 1 // the parent is gone
		}
		time.Sleep(10 * time.Millisecond)
	}
	return 0
}

// pausing is set while a pause is under way.
var pausing atomic.Bool

func (a *adminServer) pause(w http.ResponseWriter, r *http.Request) {
	var req struct {
		For string `json:"for"`
	}
	if r.ContentLength != 0 && !decodeBody(w, r, "pause", &req) {
		return
	}
	d := 10 * time.Second
	if req.For != "" {
		var err error
		if d, err = time.ParseDuration(req.For); err != nil || d < time.Millisecond || d > maxPause {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("for: %q is not a duration in [1ms, %v]", req.For, maxPause))
			return
		}
	}
	exe, err := os.Executable()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "pause: the node's own binary: "+err.Error())
		return
	}
	if !pausing.CompareAndSwap(false, true) {
		writeError(w, http.StatusConflict, "pause: a pause is under way")
		return
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{pauseEnv + "=" + strconv.FormatInt(d.Milliseconds(), 10)}
	a.n.log.Warn().Dur("for", d).Msg("chaos: the node pauses itself (SIGSTOP) and continues after that long")
	writeJSON(w, http.StatusAccepted, map[string]any{"paused_for": d.String(), "pid": os.Getpid()})
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if err := cmd.Start(); err != nil {
		pausing.Store(false)
		a.n.log.Error().Err(err).Msg("chaos: the pause's child did not start; the node goes on")
		return
	}
	go func() {
		// Reaps the child once it continued the node. NB: nothing is
		// logged here: the node may have stopped by then.
		cmd.Wait()
		pausing.Store(false)
	}()
}
