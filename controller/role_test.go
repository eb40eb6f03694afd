package controller

import (
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// TestActorRole: a one-voter controller, spawned through an actors.Tree,
// shows in the tree as the raft leader in its term (actors.Roled), once
// it has elected itself.
func TestActorRole(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	tree := actors.NewTree(sys, nil)
	defer tree.Close()
	pid, err := tree.SpawnNamed(Props(Config{
		NodeID: 1, Broker: image.Broker{ID: 1, Host: "127.0.0.1", Port: 9092},
		Dir: "/data/__cluster_metadata-0", FS: vfs.NewCrashableMem(), Clock: clock.Real,
		Node: configs.Default(), Logger: zerolog.Nop(), SessionTimeout: time.Hour,
		Publish: func(*image.Image) {},
	}), "controller")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sys.Root.StopFuture(pid).Wait() }()
	// The tree reads the role after each message the controller handles:
	// a bounded wait for the election.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := tree.Find("controller")
		if a != nil && a.Role == "leader" && a.Epoch >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller is not shown as leader: %+v", a)
		}
		time.Sleep(time.Millisecond)
	}
	var roles []string
	for _, e := range tree.Events().Since(0, 0) {
		if e.Type == actors.EventRole {
			roles = append(roles, e.Role)
		}
	}
	if len(roles) == 0 || roles[len(roles)-1] != "leader" {
		t.Fatalf("role events %v, want the last to be leader", roles)
	}
}
