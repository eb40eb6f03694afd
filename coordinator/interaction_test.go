package coordinator

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupInteractions runs the scenarios of testdata/group against the
// Group state machine, as etcd raft's interaction tests do: each command
// is one step; its output is every answer the step released (whoever it
// was for) and the group's state after it. Timers fire only when a
// scenario says so. Member ids are c-1, c-2, ... in the order handed out.
//
// Commands:
//
//	join name=<who> [member=<id>] [instance=<id>] [protocols=range,sticky] [version=9]
//	sync name=<who> member=<id> gen=<n> [assign=(<id>=<bytes>,...)]
//	heartbeat member=<id> gen=<n> [instance=<id>]
//	leave [members=(<id>,...)] [instances=(<id>,...)]
//	commit member=<id> gen=<n> [instance=<id>]
//	fire kind=session|rebalance|pending [member=<id>]
//	timers
func TestGroupInteractions(t *testing.T) {
	datadriven.Walk(t, "testdata/group", func(t *testing.T, path string) {
		var (
			g      *Group
			ids    int
			out    []string
			timers []Timer
		)
		g = NewGroup("g", Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute,
			NewMemberID: func(string) string { ids++; return fmt.Sprintf("c-%d", ids) },
			Now:         func() time.Time { return time.UnixMilli(0) }})
		to := func(name string) Responder {
			return func(r kmsg.Response) { out = append(out, name+": "+describe(r)) }
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			str := func(key string) string {
				var v string
				d.MaybeScanArgs(t, key, &v)
				return v
			}
			num := func(key string) int32 {
				var v int
				d.ScanArgs(t, key, &v)
				return int32(v)
			}
			opt := func(s string) *string {
				if s == "" {
					return nil
				}
				return kmsg.StringPtr(s)
			}
			switch d.Cmd {
			case "join":
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version = 9
				if d.HasArg("version") {
					req.Version = int16(num("version"))
				}
				req.Group, req.MemberID, req.InstanceID = "g", str("member"), opt(str("instance"))
				req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 30000, "consumer"
				protocols := []string{"range"}
				if d.HasArg("protocols") {
					protocols = strings.Split(str("protocols"), ",")
				}
				for _, p := range protocols {
					req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(str("name"))})
				}
				g.Join(req, "c", "/h", to(str("name")))
			case "sync":
				req := kmsg.NewPtrSyncGroupRequest()
				req.Version, req.Group, req.MemberID, req.Generation = 5, "g", str("member"), num("gen")
				if d.HasArg("assign") {
					var as []string
					d.ScanArgs(t, "assign", &as)
					for _, a := range as {
						m, v, _ := strings.Cut(a, "=")
						req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(v)})
					}
				}
				g.Sync(req, to(str("name")))
			case "heartbeat":
				req := kmsg.NewPtrHeartbeatRequest()
				req.Group, req.MemberID, req.Generation, req.InstanceID = "g", str("member"), num("gen"), opt(str("instance"))
				g.Heartbeat(req, to("heartbeat "+req.MemberID))
			case "leave":
				req := kmsg.NewPtrLeaveGroupRequest()
				req.Version, req.Group = 5, "g"
				var ms, is []string
				if d.HasArg("members") {
					d.ScanArgs(t, "members", &ms)
				}
				if d.HasArg("instances") {
					d.ScanArgs(t, "instances", &is)
				}
				for _, m := range ms {
					req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{MemberID: m})
				}
				for _, i := range is {
					req.Members = append(req.Members, kmsg.LeaveGroupRequestMember{InstanceID: kmsg.StringPtr(i)})
				}
				g.Leave(req, to("leave"))
			case "commit":
				err := g.CheckCommit(num("gen"), str("member"), opt(str("instance")))
				out = append(out, "commit: "+errName(errCode(err)))
			case "fire":
				kind := map[string]TimerKind{"session": TimerSession, "rebalance": TimerRebalance, "pending": TimerPendingMember}[str("kind")]
				member := str("member")
				due := timers
				timers = nil
				fired := 0
				for _, tm := range due {
					if tm.Kind == kind && (member == "" || tm.Member == member) {
						g.Fire(tm)
						fired++
					} else {
						timers = append(timers, tm)
					}
				}
				out = append(out, fmt.Sprintf("fired %d", fired))
			case "timers":
				var lines []string
				for _, tm := range timers {
					lines = append(lines, fmt.Sprintf("%v %s after %v", []string{"session", "rebalance", "pending"}[tm.Kind], tm.Member, tm.After))
				}
				sort.Strings(lines)
				return strings.Join(slices.Compact(lines), "\n")
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			r := g.Ready()
			for _, rep := range r.Replies {
				rep.To(rep.Resp)
			}
			timers = append(timers, r.Timers...)
			if r.GroupMetadata {
				out = append(out, "write group metadata")
			}
			out = append(out, fmt.Sprintf("state %v generation %d leader %q members %v", g.state, g.generation, g.leader, g.joinOrder))
			s := strings.Join(out, "\n")
			out = nil
			return s
		})
	})
}

func errName(code int16) string {
	if code == 0 {
		return "ok"
	}
	if err, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return err.Message
	}
	return fmt.Sprint(code)
}

// describe prints an answer compactly.
func describe(r kmsg.Response) string {
	switch r := r.(type) {
	case *kmsg.JoinGroupResponse:
		if r.ErrorCode != 0 {
			return fmt.Sprintf("JoinGroup %s member %q", errName(r.ErrorCode), r.MemberID)
		}
		var ms []string
		for _, m := range r.Members {
			ms = append(ms, m.MemberID)
		}
		s := fmt.Sprintf("JoinGroup ok member %s generation %d leader %q protocol %s", r.MemberID, r.Generation, r.LeaderID, *r.Protocol)
		if len(ms) > 0 {
			s += fmt.Sprintf(" members %v", ms)
		}
		if r.SkipAssignment {
			s += " skip-assignment"
		}
		return s
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "SyncGroup " + errName(r.ErrorCode)
		}
		return fmt.Sprintf("SyncGroup ok assignment %q", r.MemberAssignment)
	case *kmsg.HeartbeatResponse:
		return "Heartbeat " + errName(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		var ms []string
		for _, m := range r.Members {
			who := m.MemberID
			if m.InstanceID != nil {
				who = "instance " + *m.InstanceID
			}
			ms = append(ms, who+" "+errName(m.ErrorCode))
		}
		return "LeaveGroup " + strings.Join(ms, ", ")
	}
	return fmt.Sprintf("%T", r)
}
