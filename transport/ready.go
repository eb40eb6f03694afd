package transport

import (
	"time"

	"github.com/skeinlog/skein/controller/image"
)

// awaitHosted waits, up to timeout, until every partition of the named
// topics that this node hosts has loaded its log. Topic creation answers
// only then, as a client's next request is usually a produce to them. It
// returns, by topic, how many of them had not loaded when it gave up.
func (a *API) awaitHosted(topics []string, timeout time.Duration) map[string]int {
	done := make(chan struct{})
	t := time.AfterFunc(max(timeout, 0), func() { close(done) })
	defer t.Stop()
	im := a.Image()
	opening := map[string]int{}
	for _, name := range topics {
		topic := im.Topic(name)
		if topic == nil {
			continue
		}
		for _, p := range topic.Partitions {
			if !replicaOf(p, a.Node.NodeID) {
				continue
			}
			if a.Partitions.WaitReady(name, p.Index, done) == nil {
				opening[name]++ // timed out: the rest are only counted
			}
		}
	}
	return opening
}

func replicaOf(p image.Partition, node int32) bool {
	for _, r := range p.Replicas {
		if r == node {
			return true
		}
	}
	return false
}
