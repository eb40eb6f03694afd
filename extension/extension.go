package extension

import "time"

// Extension is a kind's code for one source partition of an instance: the
// runtime hands it the partition's records in offset order, and writes
// what it emits.
//
// Its output is written exactly once if Process is deterministic: the same
// records in, after the same earlier ones, give the same output in the
// same order. After a restart the runtime hands it again the records after
// its last committed position, and drops the output the cluster already
// holds. An extension that depends on the clock or on chance gets its
// output at least once.
type Extension interface {
	// Process takes the next records of the source partition, at most as
	// many as Credit allows, and emits what is to be written through out.
	// The records are the extension's to keep. An error, like a panic,
	// restarts the partition's extension actor, which starts again from
	// the last committed position.
	Process(records []Record, out Output) error
}

// Timed is implemented by an Extension that acts on time as well as on
// records (a delay, a window that closes): the runtime calls Tick about
// every TickInterval, between Process calls, with the time. Its kind must
// keep state (Kind.State): a tick that emits or changes state is recorded
// in the state topic first, so that after a restart the ticks after the
// committed position are replayed, with their times, where they fell among
// the records, and the output is written exactly once. A tick that emits
// nothing and changes no state is not recorded: whatever it changed that
// is not in the state is gone after a restart.
type Timed interface {
	Tick(now time.Time, out Output) error
}

// Written is implemented by an Extension that wants to know where its
// output landed: between Process calls, the runtime tells it of each batch
// a target acknowledged, with the offset the target gave its first record,
// and the records as they were emitted (their Offset, Topic and Partition
// as the extension set them). Output a target already had after a restart
// is not told again.
type Written interface {
	Written(topic string, partition int32, firstOffset int64, records []Record)
}

// An Extension that implements io.Closer is closed when its actor stops or
// restarts, to let go of what it holds (clients of other clusters, say):
// once its Process or Tick in progress, if any, has returned, never beside
// one.

// TickInterval is how often a Timed extension's Tick is called.
const TickInterval = 100 * time.Millisecond

// Credited is implemented by an Extension that bounds each Process call:
// at most records records and about bytes bytes of keys and values (one
// record more than bytes is handed over whole). Without it the runtime
// hands over up to DefaultCreditRecords and DefaultCreditBytes.
type Credited interface {
	Credit() (records, bytes int)
}

// The credit of an Extension that does not say (Credited).
const (
	DefaultCreditRecords = 1000
	DefaultCreditBytes   = 1 << 20
)

// Output takes an Extension's records to write.
type Output interface {
	// Emit writes r to partition of topic, or, with partition -1, to the
	// partition its key hashes to (Kafka's default partitioner: murmur2
	// of the key; a record without a key goes to the source partition's
	// number modulo the topic's partition count). The
	// record's Topic, Partition and Offset are ignored. A topic that does
	// not exist is waited for, and shows as lag.
	Emit(topic string, partition int32, r Record)
	// Put sets key to value in the partition's state, and Delete removes
	// key from it, for a kind that keeps state (Kind.State): the state
	// Instance.State holds when the extension is made again, after a
	// restart or on another node, is what the Puts and Deletes of the
	// records before its position made it. They are written, in order
	// with the records emitted, to the instance's compacted state topic
	// (StateTopic).
	Put(key string, value []byte)
	Delete(key string)
}

// Record is one record read from a source partition, or one to write.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time
	Key       []byte
	Value     []byte
	Headers   []Header
	// ProducerID is the id of the producer that wrote a source record, -1
	// for none.
	ProducerID int64
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Instance is what an Extension is told when it is made: the instance it
// belongs to, the source partition it processes, and what it may ask of the
// cluster.
type Instance struct {
	// Name is the instance's name; Kind its kind's.
	Name, Kind string
	// Settings are the instance's settings, defaults filled in.
	Settings map[string]string
	// Topic and Partition are the source partition; SourcePartitions is
	// its topic's partition count.
	Topic            string
	Partition        int32
	SourcePartitions int32
	// Cluster is what the extension may ask of the cluster it runs in.
	Cluster Cluster
	// State is the partition's state (Output.Put), for a kind that keeps
	// state: the extension's to keep and change as it Puts and Deletes.
	State map[string][]byte
}

// Cluster is what an Extension may ask of the cluster, from its actor.
type Cluster interface {
	// Partitions returns a topic's partition count, 0 when it does not
	// exist.
	Partitions(topic string) int32
	// CreateTopic creates a topic with the cluster's default replication
	// factor, unless it exists already.
	CreateTopic(name string, partitions int32, configs map[string]string) error
	// Producer returns the client this node last saw producing with a
	// producer id, if it saw one (it forgets the oldest of many).
	Producer(id int64) (Producer, bool)
	// Bootstrap returns addresses of this cluster's Kafka listeners (this
	// node's), for a Kafka client of its own.
	Bootstrap() []string
}

// Producer is a client seen producing.
type Producer struct {
	ClientID string
	// Address is the client's host:port as the node's listener saw it.
	Address string
}
