package controller

import (
	"crypto/rand"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
)

// Config configures the controller actor.
type Config struct {
	NodeID int32
	// Host and Port are what this broker advertises to clients.
	Host string
	Port int32
	// Dir is the metadata log's directory.
	Dir   string
	FS    vfs.FS
	Clock clock.Clock
	// Node is the node's configuration: defaults for new topics and the
	// broker-level topic config defaults used to validate configs.
	Node   configs.Node
	Logger zerolog.Logger
	// Publish is called on the controller's goroutine with every new image,
	// and once at start. It must not block.
	Publish func(*image.Image)
}

// ProducerIDBlockSize is how many producer ids one AllocateProducerIDs hands out.
const ProducerIDBlockSize = 1000

// Controller is the actor that owns the cluster metadata: the only writer
// of the metadata log. It validates each command against the current image,
// writes the resulting records as one synced batch, applies them, publishes
// the new image, and answers.
//
// Restart: the image is rebuilt by replaying the metadata log.
type Controller struct {
	cfg  Config
	meta metaLog
	im   *image.Image
}

// Props returns the actor's props; spawn it as "controller" under the node.
func Props(cfg Config) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return &Controller{cfg: cfg} })
}

// Receive handles the controller's messages.
func (c *Controller) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if err := c.start(); err != nil {
			// Without its log the controller cannot serve; panicking hands
			// the decision to the supervisor, which restarts with backoff.
			panic(fmt.Errorf("controller: start: %w", err))
		}
	case *actor.Stopping, *actor.Restarting:
		if c.meta.log != nil {
			if err := c.meta.log.Close(); err != nil {
				c.cfg.Logger.Error().Err(err).Msg("closing the metadata log")
			}
			c.meta.log = nil
		}
	case *CreateTopics:
		ctx.Respond(c.createTopics(m))
	case *DeleteTopics:
		ctx.Respond(c.deleteTopics(m))
	case *CreatePartitions:
		ctx.Respond(c.createPartitions(m))
	case *AlterConfigs:
		ctx.Respond(c.alterConfigs(m))
	case *AllocateProducerIDs:
		ctx.Respond(c.allocateProducerIDs())
	}
}

func (c *Controller) start() error {
	l, err := openMetadataLog(c.cfg.FS, c.cfg.Dir, c.cfg.Clock)
	if err != nil {
		return err
	}
	c.meta = metaLog{log: l}
	im, err := c.meta.replay(image.Empty())
	if err != nil {
		return err
	}
	c.im = im
	var boot []image.Record
	if im.ClusterID == "" {
		boot = append(boot, &image.Cluster{ClusterID: newClusterID()})
	}
	self := image.Broker{ID: c.cfg.NodeID, Host: c.cfg.Host, Port: c.cfg.Port}
	if b, ok := im.Brokers[c.cfg.NodeID]; !ok || b != self {
		boot = append(boot, &image.RegisterBroker{ID: self.ID, Host: self.Host, Port: self.Port})
	}
	if len(boot) > 0 {
		if err := c.commit(boot); err != nil {
			return err
		}
	}
	c.cfg.Publish(c.im)
	return nil
}

// commit applies records to the image, writes them as one batch, and
// publishes the new image. Records are applied first, to a copy, so that
// the log never holds a record that does not apply.
func (c *Controller) commit(records []image.Record) error {
	base := c.meta.log.LogEndOffset()
	im := c.im
	for i, r := range records {
		var err error
		if im, err = im.Apply(base+int64(i), r); err != nil {
			return err
		}
	}
	if _, err := c.meta.appendRecords(records, c.cfg.Clock.Now().UnixMilli()); err != nil {
		return err
	}
	c.im = im
	c.cfg.Publish(im)
	return nil
}

func (c *Controller) allocateProducerIDs() *AllocateProducerIDsResult {
	first := c.im.NextProducerID
	if err := c.commit([]image.Record{&image.AllocateProducerIDs{First: first, Size: ProducerIDBlockSize}}); err != nil {
		return &AllocateProducerIDsResult{Err: err}
	}
	return &AllocateProducerIDsResult{First: first, Size: ProducerIDBlockSize}
}

func newClusterID() string {
	var b [16]byte
	rand.Read(b[:])
	return fmt.Sprintf("%x", b)
}

func newTopicID() image.TopicID {
	var id image.TopicID
	rand.Read(id[:])
	id[6] = id[6]&0x0f | 0x40 // UUID version 4, as Kafka's Uuid.randomUuid
	id[8] = id[8]&0x3f | 0x80
	return id
}
