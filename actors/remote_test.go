package actors

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// Test messages, under ids no Skein message uses.
type testPing struct {
	Origin
	Seq  int    `msgpack:"seq"`
	Data []byte `msgpack:"-"`
}

func (m *testPing) Serialize() (Serialized, error) { return Encode(m) }
func (m *testPing) Raw() []byte                    { return m.Data }
func (m *testPing) SetRaw(b []byte)                { m.Data = b }

// testPong is the peer's answer: what it received.
type testPong struct {
	Seq         int    `msgpack:"seq"`
	Size        int    `msgpack:"size"`
	Sum         uint64 `msgpack:"sum"`
	Node        int32  `msgpack:"node"`
	Incarnation uint64 `msgpack:"inc"`
	Unknown     string `msgpack:"unknown"`
	Count       int    `msgpack:"count"` // pings the echo has received
}

func (m *testPong) Serialize() (Serialized, error) { return Encode(m) }

func init() {
	Register[testPing](60001)
	Register[testPong](60002)
}

// The remoting tests run one Remote per process, the test binary's and a
// peer's (the same binary, run again): protoactor's remote.Start writes
// gRPC's global logger, which races with a second Remote's server in the
// same process.

// TestMain runs the peer when the test binary is started as one.
func TestMain(m *testing.M) {
	if os.Getenv(peerEnv) != "" {
		runPeer()
		return
	}
	os.Exit(m.Run())
}

const peerEnv = "SKEIN_ACTORS_REMOTE_PEER"

// runPeer starts remoting and an echo actor, prints the echo's address,
// and serves until its stdin closes.
func runPeer() {
	sys := NewSystem(zerolog.Nop())
	r, addr, err := StartRemote(sys, RemoteConfig{Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	pings := 0
	pid, err := sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *testPing:
			pings++
			c.Respond(&testPong{Seq: m.Seq, Size: len(m.Data), Node: m.Node, Incarnation: m.Incarnation, Sum: sum(m.Data), Count: pings})
		case *Unknown:
			c.Respond(&testPong{Seq: -1, Unknown: fmt.Sprintf("%d: %s", m.TypeID, m.Reason)})
		}
	}), "echo")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(addr, pid.Id)
	io.Copy(io.Discard, os.Stdin)
	r.Shutdown(false)
}

func sum(b []byte) uint64 {
	var s uint64
	for i, c := range b {
		s += uint64(i+1) * uint64(c)
	}
	return s
}

// startPeer runs the peer process and returns its echo actor's PID.
func startPeer(t testing.TB) *actor.PID {
	t.Helper()
	pid, _ := startPeerProcess(t)
	return pid
}

// startPeerProcess runs the peer process and returns its echo actor's
// PID and the process.
func startPeerProcess(t testing.TB) (*actor.PID, *os.Process) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), peerEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("peer: %v", err)
	}
	var addr, id string
	if _, err := fmt.Sscan(line, &addr, &id); err != nil {
		t.Fatalf("peer said %q", line)
	}
	return actor.NewPID(addr, id), cmd.Process
}

// local is this process's one actor system with remoting, shared by the
// tests: a Remote's goroutines outlive its Shutdown, and a second Start
// would race with them.
var local struct {
	once   sync.Once
	sys    *actor.ActorSystem
	remote *Remote
	links  *Links
	err    error
}

// callers numbers the callers, whose names must differ: a stopped one's
// name may not be free yet.
var callers atomic.Int64

// startLocal returns an actor on this process's remoting that sends what
// it is told to target, as itself, and reports the answers.
func startLocal(t testing.TB, target *actor.PID) (*actor.ActorSystem, *actor.PID, <-chan *testPong) {
	t.Helper()
	local.once.Do(func() {
		local.sys, local.links = NewSystem(zerolog.Nop()), NewLinks()
		local.remote, _, local.err = StartRemote(local.sys, RemoteConfig{Listen: "127.0.0.1:0", Links: local.links})
	})
	if local.err != nil {
		t.Fatal(local.err)
	}
	got := make(chan *testPong, 100)
	pid, err := local.sys.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *testPing, *Frame:
			c.Request(target, m)
		case *testPong:
			got <- m
		}
	}), fmt.Sprintf("caller-%d", callers.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.sys.Root.Stop(pid) })
	return local.sys, pid, got
}

func receive(t *testing.T, ch <-chan *testPong) *testPong {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("nothing received in 30 s")
		return nil
	}
}

// TestRemoteRoundTrip: a registered message crosses to another process
// with its raw bytes outside msgpack, and the answer comes back to the
// sender's PID.
func TestRemoteRoundTrip(t *testing.T) {
	sys, caller, got := startLocal(t, startPeer(t))
	data := bytes.Repeat([]byte("record"), 100)
	sys.Root.Send(caller, &testPing{Origin: Origin{Node: 1, Incarnation: 7}, Seq: 42, Data: data})
	if p := receive(t, got); p.Seq != 42 || p.Node != 1 || p.Incarnation != 7 || p.Size != len(data) || p.Sum != sum(data) {
		t.Fatalf("answered %+v", p)
	}
}

// TestRemoteUnknownFrames: a frame of an unregistered type, or whose body
// does not decode, reaches the target as *Unknown, and the connection
// keeps delivering what follows.
func TestRemoteUnknownFrames(t *testing.T) {
	sys, caller, got := startLocal(t, startPeer(t))
	// A newer peer's message, then a corrupt one, then a good one.
	sys.Root.Send(caller, &Frame{TypeId: 4242, Body: []byte{0x80}})
	sys.Root.Send(caller, &Frame{TypeId: 60001, Body: []byte{0xc1}})
	sys.Root.Send(caller, &testPing{Seq: 1})
	if p := receive(t, got); p.Seq != -1 || !strings.HasPrefix(p.Unknown, "4242: unregistered") {
		t.Fatalf("first: %+v", p)
	}
	if p := receive(t, got); p.Seq != -1 || !strings.HasPrefix(p.Unknown, "60001: ") || !strings.Contains(p.Unknown, "testPing") {
		t.Fatalf("second: %+v", p)
	}
	if p := receive(t, got); p.Seq != 1 {
		t.Fatalf("third: %+v", p)
	}
}

// TestRemoteLargeBatch: a burst of frames near the size limit arrives
// whole. gRPC's default 4 MiB receive limit would drop the stream, and
// every message on it, at the first batch holding three of them. Frames
// over the limit between them are refused, and are not sent.
func TestRemoteLargeBatch(t *testing.T) {
	sys, caller, got := startLocal(t, startPeer(t))
	const n = 12
	data := bytes.Repeat([]byte{0xab}, MaxRemoteMessage-4096)
	for i := range n {
		sys.Root.Send(caller, &testPing{Seq: i, Data: data})
		// A frame over the limit is refused on send; what follows it
		// still goes.
		sys.Root.Send(caller, &testPing{Seq: -2, Data: make([]byte, MaxRemoteMessage+1)})
	}
	for i := range n {
		if p := receive(t, got); p.Seq != i || p.Size != len(data) || p.Sum != sum(data) {
			t.Fatalf("message %d: answered %+v", i, p)
		}
	}
}

// TestRegisterRefusesDuplicates: ids and types are registered once.
func TestRegisterRefusesDuplicates(t *testing.T) {
	for name, f := range map[string]func(){
		"id":   func() { Register[testPong](60001) },
		"type": func() { Register[testPing](60003) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("duplicate %s accepted", name)
				}
			}()
			f()
		}()
	}
	if _, err := Encode(&Unknown{}); err == nil {
		t.Error("an unregistered type encoded")
	}
}

// BenchmarkRemoteRoundTrip measures a control message's round trip
// between two processes on loopback: a small registered message to an
// actor in the peer and its answer, one outstanding. It reports the
// median and 99th percentile.
func BenchmarkRemoteRoundTrip(b *testing.B) {
	sys, caller, got := startLocal(b, startPeer(b))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		sys.Root.Send(caller, &testPing{Seq: i})
		select {
		case p := <-got:
			if p.Seq != i {
				b.Fatalf("answer %d to %d", p.Seq, i)
			}
		case <-time.After(30 * time.Second):
			b.Fatal("no answer in 30 s")
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
