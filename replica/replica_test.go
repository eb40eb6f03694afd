package replica

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The state machines are tested datadriven, as etcd raft's are: each file
// in testdata/leader and testdata/follower is a script of inputs, each
// followed by the state it leaves. Times are seconds from a fixed start
// (at=N). Run with -rewrite to update the expected outputs after a
// deliberate change, and read the diff.

var t0 = time.Unix(1_000_000, 0)

func seconds(t *testing.T, d *datadriven.TestData) time.Time {
	var s int
	d.ScanArgs(t, "at", &s)
	return t0.Add(time.Duration(s) * time.Second)
}

func TestLeader(t *testing.T) {
	datadriven.Walk(t, "testdata/leader", func(t *testing.T, path string) {
		var l *Leader
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var asked []int32
			switch d.Cmd {
			case "new":
				var self int32
				var replicas, isr []int32
				var end, hw int64
				var lag time.Duration
				d.ScanArgs(t, "self", &self)
				d.ScanArgs(t, "replicas", &replicas)
				d.ScanArgs(t, "isr", &isr)
				d.ScanArgs(t, "end", &end)
				d.ScanArgs(t, "hw", &hw)
				d.ScanArgs(t, "lag", &lag)
				l = NewLeader(self, replicas, isr, end, hw, lag, seconds(t, d))
			case "append":
				var end int64
				d.ScanArgs(t, "end", &end)
				l.Appended(end)
			case "fetch":
				var replica int32
				var offset int64
				d.ScanArgs(t, "replica", &replica)
				d.ScanArgs(t, "offset", &offset)
				asked = l.Fetched(replica, offset, seconds(t, d))
			case "tick":
				asked = l.Tick(seconds(t, d))
			case "commit":
				var isr []int32
				d.ScanArgs(t, "isr", &isr)
				l.Committed(isr)
			case "refuse":
				l.Refused(seconds(t, d))
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			var b strings.Builder
			if asked != nil {
				fmt.Fprintf(&b, "ask isr=%v\n", asked)
			}
			fmt.Fprintf(&b, "hw=%d isr=%v", l.HighWatermark(), l.ISR())
			if l.pending != nil {
				fmt.Fprintf(&b, " in-flight=%v", l.pending)
			}
			return b.String()
		})
	})
}

func TestFollower(t *testing.T) {
	datadriven.Walk(t, "testdata/follower", func(t *testing.T, path string) {
		var f *Follower
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			truncate, startAt := int64(-1), int64(-1)
			switch d.Cmd {
			case "new":
				var leader, epoch, lastEpoch int32
				var end, hw int64
				d.ScanArgs(t, "leader", &leader)
				d.ScanArgs(t, "epoch", &epoch)
				d.ScanArgs(t, "end", &end)
				d.ScanArgs(t, "last-epoch", &lastEpoch)
				d.ScanArgs(t, "hw", &hw)
				f = NewFollower(leader, epoch, end, lastEpoch, hw)
			case "answer":
				a := Answer{DivergingEpoch: -1, DivergingEnd: -1}
				if d.HasArg("err") {
					var name string
					d.ScanArgs(t, "err", &name)
					a.Err = errorNamed(t, name)
				}
				if d.HasArg("diverging") {
					d.ScanArgs(t, "diverging", &a.DivergingEpoch, &a.DivergingEnd)
				}
				d.MaybeScanArgs(t, "hw", &a.HighWatermark)
				d.MaybeScanArgs(t, "log-start", &a.LogStartOffset)
				// local=(epoch,end) is the local log's answer for the
				// diverging epoch; without it the log knows no epoch.
				localEpoch, localEnd := int32(-1), int64(-1)
				if d.HasArg("local") {
					d.ScanArgs(t, "local", &localEpoch, &localEnd)
				}
				act := f.Answered(a, func(int32) (int32, int64) { return localEpoch, localEnd })
				truncate, startAt = act.Truncate, act.StartAt
			case "appended", "truncated":
				var end int64
				var lastEpoch int32
				d.ScanArgs(t, "end", &end)
				d.ScanArgs(t, "last-epoch", &lastEpoch)
				if d.Cmd == "appended" {
					f.Appended(end, lastEpoch)
				} else {
					f.Truncated(end, lastEpoch)
				}
			case "become":
				var leader, epoch int32
				d.ScanArgs(t, "leader", &leader)
				d.ScanArgs(t, "epoch", &epoch)
				f.Become(leader, epoch)
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			var b strings.Builder
			if truncate >= 0 {
				fmt.Fprintf(&b, "truncate to %d\n", truncate)
			}
			if startAt >= 0 {
				fmt.Fprintf(&b, "start empty at %d\n", startAt)
			}
			p, ok := f.Fetch()
			if ok {
				fmt.Fprintf(&b, "fetch leader=%d offset=%d last-epoch=%d epoch=%d", p.Leader, p.FetchOffset, p.LastFetchedEpoch, p.CurrentLeaderEpoch)
			} else {
				fmt.Fprintf(&b, "waiting for metadata (epoch %d)", p.CurrentLeaderEpoch)
			}
			fmt.Fprintf(&b, " hw=%d", f.HighWatermark())
			return b.String()
		})
	})
}

func errorNamed(t *testing.T, name string) *kerr.Error {
	for _, e := range []*kerr.Error{kerr.FencedLeaderEpoch, kerr.UnknownLeaderEpoch, kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.OffsetOutOfRange} {
		if e.Message == name {
			return e
		}
	}
	t.Fatalf("unknown error %s", name)
	return nil
}
