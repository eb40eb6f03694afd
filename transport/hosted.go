package transport

import (
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
)

// topicRef resolves a request's topic, named (before topic ids) or by id.
func topicRef(im *image.Image, byID bool, name string, id [16]byte) (string, *kerr.Error) {
	if byID {
		if t := im.TopicsByID[image.TopicID(id)]; t != nil {
			return t.Name, nil
		}
		return "", kerr.UnknownTopicID
	}
	if im.Topic(name) == nil {
		return name, kerr.UnknownTopicOrPartition
	}
	return name, nil
}

// hosted returns the handle and newest view of a partition this node
// hosts and leads (partition.Registry.Led).
func (a *API) hosted(topic string, p int32) (*partition.Handle, *partition.View, *kerr.Error) {
	return a.Partitions.Led(a.Image(), a.Node.NodeID, topic, p)
}

// limited passes e through the node-wide limiter of storage failure lines.
func (a *API) limited(e *zerolog.Event) *zerolog.Event {
	if a.Failures == nil {
		return e
	}
	return a.Failures.Event(e)
}
