package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The crash test with a real process. TestCrashProcess re-executes this test
// binary as a child running TestCrashChild, which appends to a log on the
// operating system's filesystem and prints one line per append that
// returned; the parent kills it with SIGKILL after a random number of lines,
// recovers the log in-process and checks that every batch the child printed
// is there, intact and in order, and that nothing corrupt or partial is ever
// read. Unlike the crashable in-memory filesystem (recovery_test.go), this
// keeps the page cache, so it checks the promise the log makes to a process
// that dies: whatever Append returned survives, synced or not.

// crashChildEnv tells TestCrashChild that it is the child, and what to do:
// "<seed> <leader epoch> <directory>".
const crashChildEnv = "SKEIN_STORE_CRASH_CHILD"

const (
	crashCycles       = 20   // kill cycles of TestCrashProcess, all on one directory
	crashMaxKillAfter = 250  // the parent kills after a number of lines below this
	crashChildCap     = 5000 // appends after which a child stops and waits to be killed
)

// crashOptions are the child's options: small segments, so that kills land
// around rolls too, and small indexes.
func crashOptions() Options {
	o := DefaultOptions()
	o.SegmentBytes = 64 << 10
	o.SegmentIndexBytes = 4096
	o.IndexIntervalBytes = 1024
	return o
}

// crashAck is what the child printed for one append.
type crashAck struct {
	last int64
	crc  uint32 // CRC-32 (IEEE) of the batch's bytes as appended
}

// TestCrashChild is not a test of its own: it is the child process of
// TestCrashProcess, which runs this binary with -test.run=^TestCrashChild$
// and crashChildEnv set. Without that variable, as in every normal run, it
// returns at once and counts as a pass: there is nothing to skip, since it
// checks nothing by itself.
//
// As the child it opens the log in the directory it was given, recovering
// whatever the previous child left, and appends batches of random sizes
// forever (until crashChildCap), syncing now and then. After each Append
// returns it writes "<baseOffset> <lastOffset> <crc32>" to stdout in one
// write, so that a kill never leaves half a line. On any error it fails,
// and the parent, which expects to kill it, reports its output.
func TestCrashChild(t *testing.T) {
	spec, ok := os.LookupEnv(crashChildEnv)
	if !ok {
		return // not the child: see above
	}
	parts := strings.SplitN(spec, " ", 3)
	if len(parts) != 3 {
		t.Fatalf("%s=%q: want <seed> <epoch> <dir>", crashChildEnv, spec)
	}
	seed, err1 := strconv.ParseUint(parts[0], 10, 64)
	epoch, err2 := strconv.ParseInt(parts[1], 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("%s=%q: %v", crashChildEnv, spec, err)
	}
	l, err := Open(Config{Dir: parts[2], Options: crashOptions()})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 0))
	line := make([]byte, 0, 64)
	for range crashChildCap {
		b := logBatch(1+r.IntN(6), r.IntN(1200), time.Now().UnixMilli())
		res, err := l.Append(b, int32(epoch))
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(8) == 0 {
			if err := l.SyncTo(res.LastOffset + 1); err != nil {
				t.Fatal(err)
			}
		}
		// Append rewrote the base offset and epoch in b: these are the
		// bytes as they are in the log.
		line = fmt.Appendf(line[:0], "%d %d %d\n", res.BaseOffset, res.LastOffset, crc32.ChecksumIEEE(b))
		if _, err := os.Stdout.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	// Done: wait to be killed. Stdin is a pipe from the parent, so this
	// ends if the parent dies first.
	io.Copy(io.Discard, os.Stdin)
}

// TestCrashProcess runs crashCycles children on one directory, killing each
// with SIGKILL after a random number of acknowledged appends (counted in
// lines, not time, so that a slow machine changes nothing but where the
// kill lands), and after each recovers the log and checks it against every
// acknowledgement so far. Each child continues the log its predecessors
// left, in a higher leader epoch.
func TestCrashProcess(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	dir := filepath.Join(t.TempDir(), "topic-0")
	acked := map[int64]crashAck{}
	lastAcked := int64(-1)
	for cycle := range crashCycles {
		killAfter := r.IntN(crashMaxKillAfter)
		acks, others := runCrashChild(t, dir, seed+uint64(cycle), int32(cycle), killAfter)
		for _, line := range acks {
			var base, last int64
			var crc uint32
			if _, err := fmt.Sscanf(line, "%d %d %d", &base, &last, &crc); err != nil {
				t.Fatalf("cycle %d: child printed %q: %v", cycle, line, err)
			}
			if _, dup := acked[base]; dup {
				t.Fatalf("cycle %d: offset %d acknowledged twice", cycle, base)
			}
			if base <= lastAcked {
				t.Fatalf("cycle %d: acknowledged %d-%d after %d", cycle, base, last, lastAcked)
			}
			acked[base] = crashAck{last: last, crc: crc}
			lastAcked = last
		}
		if len(others) > 0 {
			t.Fatalf("cycle %d: child printed more than acknowledgements:\n%s", cycle, strings.Join(others, "\n"))
		}
		checkCrashRecovered(t, dir, acked, lastAcked)
		// Half the time, make the next child's Open rescan its active
		// segment as well, as after a crash, instead of trusting the clean
		// shutdown the check above ended with.
		if r.IntN(2) == 0 {
			if err := os.Remove(filepath.Join(dir, cleanMarkerFile)); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, size := dirSegmentBytes(t, dir)
	t.Logf("%d cycles, %d batches acknowledged, log end %d, %d segments, %d bytes", crashCycles, len(acked), lastAcked+1, n, size)
}

// runCrashChild runs one child on dir, kills it after killAfter lines, and
// returns every line it printed: acknowledgements (three numbers) and
// anything else.
func runCrashChild(t *testing.T, dir string, seed uint64, epoch int32, killAfter int) (acks, others []string) {
	t.Helper()
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		// Only a guard against a hung child, so that the test fails with
		// its output instead of the whole binary timing out.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %s", crashChildEnv, seed, epoch, dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// If this test fails before the child is killed and reaped, do not
	// leave it appending (Kill after Wait does nothing).
	defer cmd.Process.Kill()
	killed := false
	kill := func() {
		if !killed {
			killed = true
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Errorf("kill child: %v", err)
			}
		}
	}
	if killAfter == 0 {
		kill() // somewhere in its start-up or its Open
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) == 3 && isDigits(fields[0]) {
			acks = append(acks, line)
		} else {
			others = append(others, line)
		}
		if len(acks) == killAfter {
			kill()
		}
	}
	// The pipe ends when the child is dead; the lines it wrote before are
	// all read by now.
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the child's output: %v", err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !killed {
		t.Fatalf("child (killed: %v) ended with %v after %d acknowledgements; output:\n%s\nstderr:\n%s",
			killed, err, len(acks), strings.Join(others, "\n"), stderr.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not by SIGKILL; output:\n%s\nstderr:\n%s", err, strings.Join(others, "\n"), stderr.String())
	}
	if bytes.Contains(stderr.Bytes(), []byte("DATA RACE")) {
		t.Fatalf("race in the child:\n%s", stderr.String())
	}
	return acks, others
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// checkCrashRecovered opens the log the children wrote, as the next
// process would, and checks it: the log starts at 0 and its batches follow
// each other without gaps (nothing here compacts or deletes); every batch
// passes its CRC and reads whole; every acknowledged batch is at its
// offsets with the bytes the child appended; the log ends at or after the
// last acknowledgement (it may hold batches appended after the last line
// the child printed). It closes the log cleanly.
func checkCrashRecovered(t *testing.T, dir string, acked map[int64]crashAck, lastAcked int64) {
	t.Helper()
	l, err := Open(Config{Dir: dir, Options: crashOptions()})
	if err != nil {
		t.Fatalf("recover: %v", err)
	}
	defer func() {
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	v := l.View()
	if v.LogStartOffset != 0 {
		t.Fatalf("log starts at %d", v.LogStartOffset)
	}
	if v.LogEndOffset < lastAcked+1 {
		t.Fatalf("log ends at %d, but %d was acknowledged", v.LogEndOffset, lastAcked)
	}
	if d := l.DurableOffset(); d != v.LogEndOffset {
		t.Fatalf("recovered log durable to %d, ends at %d", d, v.LogEndOffset)
	}
	found := 0
	next := int64(0)
	for next < v.LogEndOffset {
		b, err := v.ReadBytes(next, ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			t.Fatalf("read at %d: %v", next, err)
		}
		if len(b) == 0 {
			t.Fatalf("read at %d, below the log end %d, returned nothing", next, v.LogEndOffset)
		}
		err = ForEachBatch(b, func(bb []byte, h Header) error {
			if err := CheckCRC(bb); err != nil {
				return fmt.Errorf("batch at %d: %w", h.BaseOffset, err)
			}
			if h.BaseOffset != next {
				return fmt.Errorf("batch at %d, want %d", h.BaseOffset, next)
			}
			if a, ok := acked[h.BaseOffset]; ok {
				if h.LastOffset() != a.last || crc32.ChecksumIEEE(bb) != a.crc {
					return fmt.Errorf("acknowledged batch %d-%d (crc32 %08x) reads as %d-%d (crc32 %08x)",
						h.BaseOffset, a.last, a.crc, h.BaseOffset, h.LastOffset(), crc32.ChecksumIEEE(bb))
				}
				found++
			}
			next = h.NextOffset()
			return nil
		})
		if err != nil {
			t.Fatal(err) // ForEachBatch also fails on a partial batch
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged batches found", found, len(acked))
	}
}
