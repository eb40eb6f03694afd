package coordinator

import (
	"github.com/skeinlog/skein/controller/image"
)

// Topics is what consumer groups know of the cluster's topics: the node's
// metadata image (ImageTopics).
type Topics interface {
	// Topic returns a topic's id and partition count, ok false if the
	// topic does not exist.
	Topic(name string) (id [16]byte, partitions int32, ok bool)
	// Name returns the name of the topic with an id.
	Name(id [16]byte) (string, bool)
	// Names returns the names of the topics a regular expression may
	// subscribe to, sorted, and a version that changes whenever they do.
	Names() (names []string, version int64)
}

// noTopics is Topics when none are known.
type noTopics struct{}

func (noTopics) Topic(string) ([16]byte, int32, bool) { return [16]byte{}, 0, false }
func (noTopics) Name([16]byte) (string, bool)         { return "", false }
func (noTopics) Names() ([]string, int64)             { return nil, 0 }

func (g *Group) topics() Topics {
	if g.cfg.Topics == nil {
		return noTopics{}
	}
	if t := g.cfg.Topics(); t != nil {
		return t
	}
	return noTopics{}
}

// ImageTopics returns the topics of a metadata image.
func ImageTopics(im *image.Image) Topics { return imageTopics{im} }

type imageTopics struct{ im *image.Image }

func (t imageTopics) Topic(name string) ([16]byte, int32, bool) {
	tp := t.im.Topic(name)
	if tp == nil {
		return [16]byte{}, 0, false
	}
	return [16]byte(tp.ID), int32(len(tp.Partitions)), true
}

func (t imageTopics) Name(id [16]byte) (string, bool) {
	tp := t.im.TopicsByID[image.TopicID(id)]
	if tp == nil {
		return "", false
	}
	return tp.Name, true
}

// Names includes internal topics: Kafka's broker-side resolution of
// KIP-848 regular expressions matches every topic of the image (only the
// classic consumers' client-side exclude.internal.topics leaves them
// out). The image's offset versions them: every change to the topics is a
// new record.
func (t imageTopics) Names() ([]string, int64) {
	return t.im.TopicNames(), t.im.Offset
}
