package extension

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skeinlog/skein/partition"
)

// Positions is where instances keep their positions: a consumer group per
// instance (GroupFor), with a committed offset per source partition, as a
// Kafka consumer's, so that Kafka's tools show an instance's lag. The node
// provides it over its own Kafka listener.
type Positions interface {
	// Fetch returns the committed offset and metadata of a source
	// partition; ok is false when none was committed.
	Fetch(ctx context.Context, group, topic string, partition int32) (offset int64, metadata string, ok bool, err error)
	// Commit commits offset and metadata for a source partition.
	Commit(ctx context.Context, group, topic string, partition int32, offset int64, metadata string) error
	// Read calls fn with the key, value and headers of each record of a
	// partition, from its start to its high watermark.
	Read(ctx context.Context, topic string, partition int32, fn func(key, value []byte, headers []Header)) error
	// LastSequence returns the sequence number of the last record a
	// producer id wrote to a partition, as the partition's leader knows it
	// (DescribeProducers); ok is false when the leader knows no such
	// producer.
	LastSequence(ctx context.Context, topic string, partition int32, producerID int64) (seq int32, ok bool, err error)
}

// GroupFor is the consumer group that holds an instance's positions.
func GroupFor(instance string) string { return "skein-extension-" + instance }

// StateTopic is the compacted topic that holds an instance's state
// (Output.Put): the state of source partition p of any source topic is in
// its partition p modulo its partition count, under keys prefixed with
// "<topic>/<p>/".
func StateTopic(instance string) string { return "skein-extension-" + instance + "-state" }

// stateConfigs are the state topic's configs: compacted, and no record
// compacted away before an hour has passed, so that the state as of a
// committed position (its older values) survives the writes of the records
// after it until the position moves on.
var stateConfigs = map[string]string{"cleanup.policy": "compact", "min.compaction.lag.ms": "3600000"}

// tickKey is the key, under a partition's prefix, of the records that
// note a tick in the state topic: the position it fell at and its time.
// It is never part of the state.
const tickKey = "\x00tick"

// tick is a noted tick.
type tick struct {
	pos int64
	at  time.Time
}

func encodeTick(t tick) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(t.pos))
	return binary.BigEndian.AppendUint64(b, uint64(t.at.UnixNano()))
}

func decodeTick(b []byte) (tick, bool) {
	if len(b) != 16 {
		return tick{}, false
	}
	return tick{pos: int64(binary.BigEndian.Uint64(b)), at: time.Unix(0, int64(binary.BigEndian.Uint64(b[8:])))}, true
}

// The headers of a state record: the producer id and sequence number it was
// written with, which tell a restarted actor whether the record is part of
// the state as of its committed position.
const (
	headerStateProducer = "skein-producer"
	headerStateSequence = "skein-sequence"
)

// position is what a commit records besides the offset, in its metadata:
// the producer id the partition's output is written with, and for each
// partition written to, the sequence number of the next record the output
// of the records from the offset on starts with. A restarted actor
// processes those records again and numbers their output from there: what
// a target already has (its last sequence of the producer) is dropped.
type position struct {
	producerID int64
	next       map[partition.Key]int32
}

const positionVersion = "skein-ext/1"

// encode returns the commit metadata of p: the version, the producer id,
// then topic:partition=sequence for each target, sorted.
func (p *position) encode() string {
	var b strings.Builder
	b.WriteString(positionVersion)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(p.producerID, 10))
	keys := slices.SortedFunc(maps.Keys(p.next), func(a, b partition.Key) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	for _, k := range keys {
		fmt.Fprintf(&b, " %s:%d=%d", k.Topic, k.Partition, p.next[k])
	}
	return b.String()
}

// decodePosition parses commit metadata that encode wrote.
func decodePosition(s string) (*position, error) {
	f := strings.Fields(s)
	if len(f) < 2 || f[0] != positionVersion {
		return nil, fmt.Errorf("commit metadata %q is not an extension's position", s)
	}
	pid, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || pid < 0 {
		return nil, fmt.Errorf("commit metadata %q: producer id %q", s, f[1])
	}
	p := &position{producerID: pid, next: map[partition.Key]int32{}}
	for _, e := range f[2:] {
		tp, seq, ok1 := strings.Cut(e, "=")
		topic, part, ok2 := strings.Cut(tp, ":")
		n, err1 := strconv.ParseInt(part, 10, 32)
		q, err2 := strconv.ParseInt(seq, 10, 32)
		if !ok1 || !ok2 || topic == "" || err1 != nil || err2 != nil || n < 0 || q < 0 {
			return nil, fmt.Errorf("commit metadata %q: target %q", s, e)
		}
		p.next[partition.Key{Topic: topic, Partition: int32(n)}] = int32(q)
	}
	return p, nil
}
