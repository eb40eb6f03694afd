package library

import (
	"fmt"
	"strings"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "mirror",
		Doc:  "copies topics, of this cluster or another (source.bootstrap.servers), to prefixed topics, partition by partition, keeping keys, headers and timestamps",
		Settings: []extension.Setting{
			{Name: "target.topic.prefix", Default: "mirror.", Doc: "the copy of topic T is <prefix>T, created with T's partition count"},
		},
		// A mirror never reads its own copies (source.topics=.* would
		// copy them again, and again).
		Skip: func(settings map[string]string, topic string) bool {
			return strings.HasPrefix(topic, settings["target.topic.prefix"])
		},
		New: newMirror,
	})
}

// mirror copies one source partition to the same partition of its target
// topic.
type mirror struct {
	target    string
	partition int32
}

func newMirror(in extension.Instance) (extension.Extension, error) {
	prefix := in.Settings["target.topic.prefix"]
	if prefix == "" {
		return nil, fmt.Errorf("target.topic.prefix is empty: the copy would be the topic itself")
	}
	m := &mirror{target: prefix + in.Topic, partition: in.Partition}
	if in.Cluster.Partitions(m.target) == 0 {
		if err := in.Cluster.CreateTopic(m.target, in.SourcePartitions, nil); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *mirror) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		out.Emit(m.target, m.partition, r)
	}
	return nil
}
