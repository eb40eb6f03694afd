package txn

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTxnInteractions runs the scenarios of testdata/txn against the Txn
// state machine, as etcd raft's interaction tests do: each command is one
// step; its output is every answer the step released, the record it asks
// to write (decoded: LastEpoch is not in it), the markers it asks for, the
// transactions it completed, and the state after it. Producer ids are handed out from
// 1000; the clock is manual and starts at 0.
//
// Commands:
//
//	config [max-timeout=<ms>] [expiration=<ms>] [next-pid=<id>]   a fresh id "tx"
//	seed pid=<id> epoch=<n> state=<Status> [parts=(t-0,...)] [start=<ms>] [tv2]
//	                                     a record in the log as if written before, then restart
//	init [pid=<id>] [epoch=<n>] [timeout=<ms>]
//	add pid=<id> epoch=<n> parts=(t-0,...) [verify]
//	offsets pid=<id> epoch=<n> group=<g>
//	end commit|abort pid=<id> epoch=<n> [v=<EndTxn version>]
//	written [err=<kerr name>]           the write in flight is durable, or failed
//	marker t-0 [t-1 ...]                markers written
//	advance by=<ms>                     the clock moves; Tick if NextTick is due
//	tick                                Tick now
//	restart                             the Txn is aborted (NOT_COORDINATOR), and a new one
//	                                    restored from the records written, coordinator epoch+1
//	describe
//	list [pids=(...)] [states=(...)] [duration=<ms>]
func TestTxnInteractions(t *testing.T) {
	datadriven.Walk(t, "testdata/txn", func(t *testing.T, path string) {
		h := &harness{}
		h.config(900000, 0, 1000)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.step(t, d)
		})
	})
}

type harness struct {
	cfg        Config
	txn        *Txn
	now        int64
	nextPID    int64
	coordEpoch int32
	log        []Write // records written and acknowledged, in order
	inflight   *Write
	nextTick   int64
	out        []string
}

func (h *harness) config(maxTimeout int32, expiration, nextPID int64) {
	h.now, h.nextPID, h.coordEpoch, h.log, h.inflight, h.nextTick = 0, nextPID, 0, nil, nil, 0
	h.cfg = Config{
		MaxTimeoutMs:   maxTimeout,
		IDExpirationMs: expiration,
		NewProducerID: func() (int64, *kerr.Error) {
			h.nextPID++
			return h.nextPID - 1, nil
		},
		OffsetsPartition: func(group string) int32 { return int32(len(group)) },
	}
	h.restart()
}

// restart replays the log into a new Txn, as its actor does on start.
func (h *harness) restart() {
	h.coordEpoch++
	h.inflight = nil
	h.txn = New("tx", h.cfg)
	for _, w := range h.log {
		id, m, err := ParseRecord(w.Key, w.Value)
		if err != nil || id != "tx" {
			panic(fmt.Sprintf("a record of the log: %q %v", id, err))
		}
		h.txn.Restore(m)
	}
	h.txn.Loaded(h.coordEpoch, h.now)
}

func (h *harness) step(t *testing.T, d *datadriven.TestData) string {
	i64 := func(key string, def int64) int64 {
		if !d.HasArg(key) {
			return def
		}
		var v int64
		d.ScanArgs(t, key, &v)
		return v
	}
	parts := func(key string) []TopicPartition {
		var ss []string
		if d.HasArg(key) {
			d.ScanArgs(t, key, &ss)
		}
		return parseTPs(t, ss)
	}
	pid, epoch := i64("pid", -1), int16(i64("epoch", -1))
	switch d.Cmd {
	case "config":
		h.config(int32(i64("max-timeout", 900000)), i64("expiration", 0), i64("next-pid", 1000))
		return "ok"
	case "seed":
		var state string
		d.ScanArgs(t, "state", &state)
		st, ok := ParseStatus(state)
		if !ok {
			d.Fatalf(t, "unknown state %q", state)
		}
		m := &Metadata{ProducerID: pid, PrevProducerID: i64("prev", -1), NextProducerID: i64("next", -1),
			Epoch: epoch, LastEpoch: -1, TimeoutMs: int32(i64("timeout", 60000)), Status: st,
			Partitions: parts("parts"), StartMs: i64("start", -1), UpdateMs: h.now, TV2: d.HasArg("tv2")}
		key, value := Record("tx", m)
		h.log = append(h.log, Write{key, value})
		h.restart()
	case "init":
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID = 5, kmsg.StringPtr("tx")
		req.TransactionTimeoutMillis = int32(i64("timeout", 60000))
		req.ProducerID, req.ProducerEpoch = pid, epoch
		h.txn.InitProducerID(req, h.now, func(r *kmsg.InitProducerIDResponse) {
			if r.ErrorCode != 0 {
				h.out = append(h.out, "init: "+errName(r.ErrorCode))
				return
			}
			h.out = append(h.out, fmt.Sprintf("init: ok pid=%d epoch=%d", r.ProducerID, r.ProducerEpoch))
		})
	case "add":
		verify := d.HasArg("verify")
		ps := parts("parts")
		h.txn.AddPartitions(pid, epoch, ps, verify, h.now, func(r AddResult) {
			if !verify {
				h.out = append(h.out, "add: "+kerrName(r.Err))
				return
			}
			var each []string
			for _, tp := range ps {
				each = append(each, fmt.Sprintf("%s %s", tp, kerrName(r.PartitionErr(tp))))
			}
			h.out = append(h.out, "verify: "+strings.Join(each, ", "))
		})
	case "offsets":
		var group string
		d.ScanArgs(t, "group", &group)
		h.txn.AddOffsets(pid, epoch, group, h.now, func(err *kerr.Error) { h.out = append(h.out, "offsets: "+kerrName(err)) })
	case "end":
		commit := d.HasArg("commit")
		if commit == d.HasArg("abort") {
			d.Fatalf(t, "end commit or end abort")
		}
		h.txn.EndTxn(pid, epoch, commit, i64("v", 4) >= 5, h.now, func(r EndResult) {
			s := "end: " + kerrName(r.Err)
			if r.ProducerID >= 0 {
				s += fmt.Sprintf(" pid=%d epoch=%d", r.ProducerID, r.Epoch)
			}
			h.out = append(h.out, s)
		})
	case "written":
		var err *kerr.Error
		if d.HasArg("err") {
			var name string
			d.ScanArgs(t, "err", &name)
			err = kerrByName(t, name)
		}
		if h.inflight == nil {
			d.Fatalf(t, "no write in flight")
		}
		if err == nil {
			h.log = append(h.log, *h.inflight)
		}
		h.inflight = nil
		h.txn.Written(err, h.now)
	case "marker":
		var names []string
		for _, a := range d.CmdArgs {
			names = append(names, a.Key)
		}
		for _, tp := range parseTPs(t, names) {
			h.txn.MarkerWritten(tp, h.now)
		}
	case "advance":
		h.now += i64("by", 0)
		h.out = append(h.out, fmt.Sprintf("now %d", h.now))
		if h.nextTick != 0 && h.nextTick <= h.now {
			h.out = append(h.out, "tick")
			h.txn.Tick(h.now)
		}
	case "tick":
		h.txn.Tick(h.now)
	case "restart":
		// The old actor goes away first, answering what waits on it.
		h.txn.Abort(kerr.NotCoordinator)
		for _, f := range h.txn.Ready().Replies {
			f()
		}
		h.restart()
	case "describe":
		ds := h.txn.Describe()
		if ds.ErrorCode != 0 {
			return "describe: " + errName(ds.ErrorCode)
		}
		var ps []string
		for _, top := range ds.Topics {
			for _, p := range top.Partitions {
				ps = append(ps, fmt.Sprintf("%s-%d", top.Topic, p))
			}
		}
		return fmt.Sprintf("describe: %s pid=%d epoch=%d timeout=%d start=%d parts=%v",
			ds.State, ds.ProducerID, ds.ProducerEpoch, ds.TimeoutMillis, ds.StartTimestamp, ps)
	case "list":
		f := ListFilter{DurationMs: i64("duration", -1)}
		if d.HasArg("pids") {
			d.ScanArgs(t, "pids", &f.ProducerIDs)
		}
		if d.HasArg("states") {
			var names []string
			d.ScanArgs(t, "states", &names)
			for _, n := range names {
				st, ok := ParseStatus(n)
				if !ok {
					d.Fatalf(t, "unknown state %q", n)
				}
				f.States = append(f.States, st)
			}
		}
		s, ok := h.txn.List(f, h.now)
		if !ok {
			return "list: none"
		}
		return fmt.Sprintf("list: %s pid=%d %s", s.TransactionalID, s.ProducerID, s.TransactionState)
	default:
		d.Fatalf(t, "unknown command %s", d.Cmd)
	}
	h.release()
	s := strings.Join(h.out, "\n")
	h.out = nil
	return s
}

// release takes Ready and prints it, then the state.
func (h *harness) release() {
	r := h.txn.Ready()
	for _, f := range r.Replies {
		f()
	}
	if r.Write != nil {
		if h.inflight != nil {
			panic("a second write in flight")
		}
		h.inflight = r.Write
		id, m, err := ParseRecord(r.Write.Key, r.Write.Value)
		switch {
		case err != nil || id != "tx":
			h.out = append(h.out, fmt.Sprintf("write: %q %v", id, err))
		case m == nil:
			h.out = append(h.out, "write: tombstone")
		default:
			h.out = append(h.out, "write: "+fmtMeta(m))
		}
	}
	if mk := r.Markers; mk != nil {
		outcome := "abort"
		if mk.Commit {
			outcome = "commit"
		}
		s := fmt.Sprintf("markers: %s pid=%d epoch=%d coordinator-epoch=%d %v", outcome, mk.ProducerID, mk.Epoch, mk.CoordinatorEpoch, mk.Partitions)
		if mk.TV2 {
			s += " tv2"
		}
		h.out = append(h.out, s)
	}
	for _, c := range r.Completed {
		s := "completed: abort"
		if c.Commit {
			s = "completed: commit"
		}
		if c.TimedOut {
			s += " (timed out)"
		}
		h.out = append(h.out, s)
	}
	if r.Gone {
		h.out = append(h.out, "gone")
	}
	h.nextTick = r.NextTick
	state := "state: none"
	if m, ok := h.txn.Metadata(); ok {
		state = "state: " + fmtMeta(&m)
	}
	if h.inflight != nil {
		state += " (write in flight)"
	}
	if r.NextTick != 0 {
		state += fmt.Sprintf(" tick@%d", r.NextTick)
	}
	h.out = append(h.out, state)
}

// fmtMeta prints metadata on one line, leaving out -1 ids and epochs.
func fmtMeta(m *Metadata) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s pid=%d epoch=%d", m.Status, m.ProducerID, m.Epoch)
	for _, f := range []struct {
		name string
		v    int64
	}{{"last", int64(m.LastEpoch)}, {"prev", m.PrevProducerID}, {"next", m.NextProducerID}} {
		if f.v != -1 {
			fmt.Fprintf(&b, " %s=%d", f.name, f.v)
		}
	}
	fmt.Fprintf(&b, " timeout=%d start=%d update=%d", m.TimeoutMs, m.StartMs, m.UpdateMs)
	if len(m.Partitions) > 0 {
		fmt.Fprintf(&b, " parts=%v", m.Partitions)
	}
	if m.TV2 {
		b.WriteString(" tv2")
	}
	return b.String()
}

func parseTPs(t *testing.T, ss []string) []TopicPartition {
	var out []TopicPartition
	for _, s := range ss {
		i := strings.LastIndexByte(s, '-')
		p, err := strconv.ParseInt(s[i+1:], 10, 32)
		if i < 0 || err != nil {
			t.Fatalf("bad partition %q", s)
		}
		out = append(out, TopicPartition{s[:i], int32(p)})
	}
	return out
}

func kerrName(err *kerr.Error) string { return errName(errCode(err)) }

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Message
	}
	return fmt.Sprint(code)
}

func kerrByName(t *testing.T, name string) *kerr.Error {
	for code := int16(-1); code < 200; code++ {
		if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && err.Message == name {
			return err
		}
	}
	t.Fatalf("unknown error %s", name)
	return nil
}
