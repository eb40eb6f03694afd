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
// scenario says so: by kind with fire, or as a manual clock reaches them
// with advance. Member ids are c-1, c-2, ... in the order handed out.
//
// Commands:
//
//	config [initial-delay=<duration>]   a fresh group, ids, clock and timers
//	join name=<who> [member=<id>] [instance=<id>] [protocols=range,sticky] [version=9] [rebalance=<ms>]
//	sync name=<who> member=<id> gen=<n> [assign=(<id>=<bytes>,...)]
//	heartbeat member=<id> gen=<n> [instance=<id>]
//	leave [members=(<id>,...)] [instances=(<id>,...)]
//	commit member=<id> gen=<n> [instance=<id>]
//	fire kind=session|rebalance|pending|initial-rebalance [member=<id>]
//	advance by=<duration>   fires, in order, every timer due by then
//	timers
func TestGroupInteractions(t *testing.T) {
	datadriven.Walk(t, "testdata/group", func(t *testing.T, path string) {
		var (
			g      *Group
			ids    int
			out    []string
			now    time.Duration // the manual clock, since the group was made
			timers []dueTimer
		)
		newGroup := func(cfg Config) {
			ids, now, timers = 0, 0, nil
			cfg.MinSessionTimeout, cfg.MaxSessionTimeout = time.Second, time.Minute
			cfg.NewMemberID = func(string) string { ids++; return fmt.Sprintf("c-%d", ids) }
			cfg.Now = func() time.Time { return time.UnixMilli(0).Add(now) }
			g = NewGroup("g", cfg)
		}
		newGroup(Config{})
		to := func(name string) Responder {
			return func(r kmsg.Response) { out = append(out, name+": "+describe(r)) }
		}
		// release delivers what the last step produced, its timers due
		// from now.
		release := func() {
			r := g.Ready()
			for _, rep := range r.Replies {
				rep.To(rep.Resp)
			}
			for _, tm := range r.Timers {
				timers = append(timers, dueTimer{at: now + tm.After, Timer: tm})
			}
			if r.GroupMetadata {
				out = append(out, "write group metadata")
			}
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
			dur := func(key string) time.Duration {
				v, err := time.ParseDuration(str(key))
				if err != nil {
					d.Fatalf(t, "%s: %v", key, err)
				}
				return v
			}
			switch d.Cmd {
			case "config":
				var cfg Config
				if d.HasArg("initial-delay") {
					cfg.InitialRebalanceDelay = dur("initial-delay")
				}
				newGroup(cfg)
				return "ok"
			case "join":
				req := kmsg.NewPtrJoinGroupRequest()
				req.Version = 9
				if d.HasArg("version") {
					req.Version = int16(num("version"))
				}
				req.Group, req.MemberID, req.InstanceID = "g", str("member"), opt(str("instance"))
				req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 30000, "consumer"
				if d.HasArg("rebalance") {
					req.RebalanceTimeoutMillis = num("rebalance")
				}
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
				kind, ok := timerKinds[str("kind")]
				if !ok {
					d.Fatalf(t, "unknown timer kind %q", str("kind"))
				}
				member := str("member")
				due := timers
				timers = nil
				fired := 0
				for _, tm := range due {
					if tm.Kind == kind && (member == "" || tm.Member == member) {
						g.Fire(tm.Timer)
						fired++
					} else {
						timers = append(timers, tm)
					}
				}
				out = append(out, fmt.Sprintf("fired %d", fired))
			case "advance":
				// The clock moves to each due timer in turn, so that the
				// timers a firing sets are due from its time.
				until := now + dur("by")
				for {
					i := -1 // the earliest due, the first set on a tie
					for j, tm := range timers {
						if tm.at <= until && (i < 0 || tm.at < timers[i].at) {
							i = j
						}
					}
					if i < 0 {
						break
					}
					tm := timers[i]
					timers = slices.Delete(timers, i, i+1)
					now = tm.at
					out = append(out, fmt.Sprintf("%v: fire %s", now, tm))
					g.Fire(tm.Timer)
					release()
				}
				now = until
				out = append(out, fmt.Sprintf("now %v", now))
			case "timers":
				var lines []string
				for _, tm := range timers {
					lines = append(lines, fmt.Sprintf("%s after %v, due at %v", tm, tm.After, tm.at))
				}
				sort.Strings(lines)
				return strings.Join(slices.Compact(lines), "\n")
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			release()
			out = append(out, fmt.Sprintf("state %v generation %d leader %q members %v", g.state, g.generation, g.leader, g.joinOrder))
			s := strings.Join(out, "\n")
			out = nil
			return s
		})
	})
}

// dueTimer is a Timer and the time on the manual clock it comes due.
type dueTimer struct {
	at time.Duration
	Timer
}

func (tm dueTimer) String() string {
	s := timerNames[tm.Kind]
	if tm.Member != "" {
		s += " " + tm.Member
	}
	return s
}

var timerNames = map[TimerKind]string{TimerSession: "session", TimerRebalance: "rebalance", TimerPendingMember: "pending",
	TimerOffsetsExpiry: "offsets-expiry", TimerConsumerSession: "consumer-session",
	TimerConsumerRevocation: "consumer-revocation", TimerInitialRebalance: "initial-rebalance"}

var timerKinds = func() map[string]TimerKind {
	m := map[string]TimerKind{}
	for k, n := range timerNames {
		m[n] = k
	}
	return m
}()

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
