package node

import (
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/rs/zerolog"
	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition"
)

// TestMetadataActorWaitsForItsRegistration: the metadata actor hosts
// nothing from an image that does not register this run of the node (one
// replayed from its own metadata log at start, which may be older than
// the partition directories on disk: a directory of a topic deleted and
// created again would be taken for the old topic's and deleted), and the
// first image that does is swept before anything is hosted, once.
func TestMetadataActorWaitsForItsRegistration(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	events := make(chan string, 16)
	partitions := sys.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if h, ok := c.Message().(*partition.Host); ok {
			events <- "host " + h.Config.Topic
		}
	}))
	cfg := configs.Default()
	cfg.NodeID = 1
	const run = 42
	logDirs, err := partition.OpenLogDirs(vfs.Default, []string{t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	md := sys.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &metadataActor{node: cfg, logDirs: logDirs, incarnation: run, partitions: partitions, registry: partition.NewRegistry(),
			current: image.Empty, hosted: map[partition.Key]image.TopicID{},
			sweep: func(*image.Image) { events <- "sweep" }}
	}))
	imageOf := func(incarnation uint64, offset int64) *image.Image {
		im := image.Empty()
		im.Offset = offset
		im.Brokers = map[int32]image.Broker{1: {ID: 1, Incarnation: incarnation}}
		tp := &image.Topic{Name: "t", ID: image.TopicID{byte(offset)},
			Partitions: []image.Partition{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}
		im.Topics = map[string]*image.Topic{"t": tp}
		im.TopicsByID = map[image.TopicID]*image.Topic{tp.ID: tp}
		return im
	}
	sys.Root.Send(md, &controller.ImagePublished{Image: imageOf(run-1, 1)}) // the previous run's registration
	sys.Root.Send(md, &controller.ImagePublished{Image: imageOf(run, 2)})
	sys.Root.Send(md, &controller.ImagePublished{Image: imageOf(run, 3)})
	var got []string
	for len(got) < 3 {
		select {
		case e := <-events:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("after %v, nothing more in 10 s", got)
		}
	}
	// The image of offset 1 hosts nothing: the first thing done is the
	// sweep, on the image of offset 2, then t is hosted for it and, under
	// its new id, for the image of offset 3.
	if want := []string{"sweep", "host t", "host t"}; !slices.Equal(got, want) {
		t.Fatalf("the metadata actor did %v, want %v", got, want)
	}
}
