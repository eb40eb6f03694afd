package partition

import (
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// TestActorRole: the partition reports its role and the leader epoch it
// acts under, read from another goroutine (actors.Roled): leader once its
// log is open and the state names this node, follower when the leadership
// moves, a new epoch under the same role, leader again.
func TestActorRole(t *testing.T) {
	var instance atomic.Pointer[actors.Roled]
	grab := func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			if _, ok := env.Message.(*actor.Started); ok {
				r := c.Actor().(actors.Roled)
				instance.Store(&r)
			}
			next(c, env)
		}
	}
	tp := startTestPartition(t, testConfig(vfs.NewCrashableMem(), clock.Real), grab)
	check := func(wantRole string, wantEpoch int32) {
		t.Helper()
		tp.barrier()
		if role, epoch := (*instance.Load()).ActorRole(); role != wantRole || epoch != wantEpoch {
			t.Fatalf("ActorRole = %q %d, want %q %d", role, epoch, wantRole, wantEpoch)
		}
	}
	check("leader", 0)
	for _, step := range []struct {
		state State
		role  string
	}{
		{State{Leader: 1, LeaderEpoch: 1, Replicas: []int32{0, 1}, ISR: []int32{0, 1}}, "follower"},
		{State{Leader: 2, LeaderEpoch: 2, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 2}}, "follower"},
		{State{Leader: 0, LeaderEpoch: 3, Replicas: []int32{0}, ISR: []int32{0}}, "leader"},
		{State{Leader: 0, LeaderEpoch: 4, Replicas: []int32{0}, ISR: []int32{0}}, "leader"},
	} {
		tp.sys.Root.Send(tp.pid, &SetState{State: step.state})
		check(step.role, step.state.LeaderEpoch)
	}
}
