package library

import (
	"fmt"
	"strings"

	"github.com/skeinlog/skein/extension"
)

// partitioning is the setting of the kinds that write to topics of their
// own choosing: where in a target a record goes.
var partitioning = extension.Setting{Name: "partitioning", Default: "key",
	Doc: "key: the partition the record's key hashes to; source: the source partition's number"}

// partitionOf returns the partition an instance's partitioning setting
// gives Output.Emit: -1 (by key) or the source partition's number.
func partitionOf(in extension.Instance) (int32, error) {
	switch in.Settings[partitioning.Name] {
	case "key":
		return -1, nil
	case "source":
		return in.Partition, nil
	}
	return 0, fmt.Errorf("partitioning is %q; it takes key or source", in.Settings[partitioning.Name])
}

// targetOf returns an instance's target.topic, which must name a topic.
func targetOf(in extension.Instance) (string, error) {
	t := strings.TrimSpace(in.Settings["target.topic"])
	if t == "" {
		return "", fmt.Errorf("target.topic is empty")
	}
	return t, nil
}
