package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Commands to the controller actor. Each is sent by transport (or the CLI
// through it) with Request or RequestFuture and answered with its Result.
// The active controller decides a command against its image; its records
// are one entry of the quorum's log, all-or-nothing, and the Result is
// sent once that entry is committed and applied on the node that was
// asked, after the new image is published there. A command the quorum
// does not commit within CommandTimeout is answered REQUEST_TIMED_OUT.

// CreateTopics creates topics (CreateTopics, and Metadata/Produce with
// auto-creation). Results come in request order.
type CreateTopics struct {
	Topics       []NewTopic
	ValidateOnly bool
	// TimeoutMs, when positive, is the request's own bound on the wait
	// for the quorum, if shorter than Config.CommandTimeout.
	TimeoutMs int32
}

// NewTopic is one topic to create. NumPartitions and ReplicationFactor of
// -1 take num.partitions and default.replication.factor.
type NewTopic struct {
	Name              string
	NumPartitions     int32
	ReplicationFactor int16
	// Assignments, when set, place each partition on the given brokers
	// (the first is the preferred leader); NumPartitions and
	// ReplicationFactor must then be -1.
	Assignments [][]int32
	Configs     map[string]string
	// Internal marks one of Kafka's internal topics (__consumer_offsets),
	// which Metadata reports with IsInternal. Only the node creates them.
	Internal bool
}

// CreateTopicsResult answers CreateTopics.
type CreateTopicsResult struct {
	Topics []TopicResult
}

// TopicResult is the outcome for one topic. Err is nil on success.
type TopicResult struct {
	Name              string
	ID                image.TopicID
	Err               *kerr.Error
	Message           string
	NumPartitions     int32
	ReplicationFactor int16
}

// DeleteTopics deletes topics by name or by id.
type DeleteTopics struct {
	Names     []string
	IDs       []image.TopicID
	TimeoutMs int32 // as CreateTopics'
}

// DeleteTopicsResult answers DeleteTopics, names first, then ids.
type DeleteTopicsResult struct {
	Topics []TopicResult
}

// CreatePartitions raises topics' partition counts.
type CreatePartitions struct {
	Topics       []PartitionCount
	ValidateOnly bool
	TimeoutMs    int32 // as CreateTopics'
}

// PartitionCount is the new total partition count of a topic.
type PartitionCount struct {
	Name        string
	Count       int32
	Assignments [][]int32 // for the new partitions only, optional
}

// CreatePartitionsResult answers CreatePartitions.
type CreatePartitionsResult struct {
	Topics []TopicResult
}

// AlterConfigs changes topic or broker configs (AlterConfigs and
// IncrementalAlterConfigs).
type AlterConfigs struct {
	Resources    []ConfigResource
	ValidateOnly bool
	// Incremental applies Ops one by one (IncrementalAlterConfigs);
	// otherwise the resource's configs are replaced by the Set ops
	// (AlterConfigs), and everything not set returns to its default.
	Incremental bool
}

// ConfigResource is a topic or the brokers, with changes to its configs.
type ConfigResource struct {
	Type image.ResourceType
	Name string // the topic, or a broker id or "" (every broker) for brokers
	Ops  []ConfigOp
}

// ConfigOp is one change, as IncrementalAlterConfigs defines them.
type ConfigOp struct {
	Name  string
	Op    OpType
	Value *string
}

// OpType is IncrementalAlterConfigs' operation, with Kafka's ids.
type OpType int8

// The config operations.
const (
	OpSet      OpType = 0
	OpDelete   OpType = 1
	OpAppend   OpType = 2
	OpSubtract OpType = 3
)

// AlterConfigsResult answers AlterConfigs, in request order.
type AlterConfigsResult struct {
	Resources []ConfigResult
}

// ConfigResult is the outcome for one resource.
type ConfigResult struct {
	Type    image.ResourceType
	Name    string
	Err     *kerr.Error
	Message string
}

// AllocateProducerIDs asks for a block of producer ids that will never be
// handed out again (InitProducerId draws ids from such blocks).
type AllocateProducerIDs struct{}

// AllocateProducerIDsResult answers AllocateProducerIDs: [First, First+Size).
type AllocateProducerIDsResult struct {
	First, Size int64
	Err         *kerr.Error
	Message     string
}

// AlterExtensions creates, replaces or deletes one extension instance
// (node/extensions.go: the admin API and the node's configured
// extensions). Exactly one of Set and Delete is given.
type AlterExtensions struct {
	// Set creates the instance Set.Name, with its settings as given (the
	// caller has checked them against the kind, which the controller may
	// not know). An instance of that name is refused unless Replace.
	Set     *image.Extension `msgpack:"set"`
	Replace bool             `msgpack:"replace"`
	// Delete names the instance to delete.
	Delete    string `msgpack:"delete"`
	TimeoutMs int32  `msgpack:"timeout"` // as CreateTopics'
}

// AlterExtensionsResult answers AlterExtensions: Err is nil once the change
// is committed (or there was nothing to change), INVALID_REQUEST for a
// malformed request, DUPLICATE_RESOURCE for a Set of a name that exists
// without Replace, RESOURCE_NOT_FOUND for a Delete of a name that does not.
type AlterExtensionsResult struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

// ImagePublished is sent by the controller to its subscribers after every
// change, and once at start.
type ImagePublished struct {
	Image *image.Image
}
