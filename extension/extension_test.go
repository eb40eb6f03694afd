package extension

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/partition/store"
)

func TestPositionRoundTrip(t *testing.T) {
	p := &position{producerID: 4242, next: map[partition.Key]int32{
		{Topic: "b", Partition: 3}: 17, {Topic: "a.x_y-z", Partition: 0}: 0, {Topic: "a.x_y-z", Partition: 11}: 2147483000,
	}}
	s := p.encode()
	if want := "skein-ext/1 4242 a.x_y-z:0=0 a.x_y-z:11=2147483000 b:3=17"; s != want {
		t.Fatalf("encode: %q, want %q", s, want)
	}
	got, err := decodePosition(s)
	if err != nil || !reflect.DeepEqual(got, p) {
		t.Fatalf("decode: %+v, %v; want %+v", got, err, p)
	}
	for _, bad := range []string{"", "offsets by kafka-consumer-groups", "skein-ext/1", "skein-ext/1 -1", "skein-ext/1 7 t=1", "skein-ext/1 7 t:x=1", "skein-ext/1 7 t:1=-3", "skein-ext/2 7"} {
		if _, err := decodePosition(bad); err == nil {
			t.Errorf("decodePosition(%q) took it", bad)
		}
	}
}

// FuzzDecodePosition: commit metadata is anyone's to write (a Kafka tool
// can commit to the group): nothing decodes to a panic, and what decodes
// encodes to itself again.
func FuzzDecodePosition(f *testing.F) {
	f.Add("skein-ext/1 4242 a:0=0 b:3=17")
	f.Add("skein-ext/1 1")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		p, err := decodePosition(s)
		if err != nil {
			return
		}
		q, err := decodePosition(p.encode())
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%q decoded to %+v, which encodes to %q: %+v, %v", s, p, p.encode(), q, err)
		}
	})
}

// TestBatchRoundTrip: the output batch a runner writes decodes, as a
// source batch, to the records emitted: keys, values, null values,
// headers (a null one too) and timestamps, with the producer's id and
// sequence in its header.
func TestBatchRoundTrip(t *testing.T) {
	ts := time.UnixMilli(1_700_000_000_000)
	in := []Record{
		{Key: []byte("k1"), Value: []byte("v1"), Timestamp: ts, Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "nil"}}},
		{Key: nil, Value: nil, Timestamp: ts.Add(-time.Second)},
		{Key: []byte{}, Value: []byte(strings.Repeat("z", 300)), Timestamp: ts.Add(time.Minute)},
	}
	b, err := encodeBatch(partition.Key{Topic: "out", Partition: 1}, 40, in, producer{pid: 99})
	if err != nil {
		t.Fatal(err)
	}
	h, err := store.ParseHeader(b)
	if err != nil || store.CheckCRC(b) != nil {
		t.Fatalf("header %+v: %v, crc %v", h, err, store.CheckCRC(b))
	}
	if h.ProducerID != 99 || h.ProducerEpoch != 0 || h.BaseSequence != 40 || h.LastOffsetDelta != 2 {
		t.Fatalf("header %+v", h)
	}
	store.SetBaseOffset(b, 1000)
	r := &runner{key: runnerKey{"i", "src", 2}, pos: 1001, maxRecords: 10, maxSize: 1 << 20}
	got, next, _, err := r.decode(b, nil, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if next != 1003 || len(got) != 2 {
		t.Fatalf("decoded %d records up to %d, want 2 up to 1003", len(got), next)
	}
	for i, g := range got {
		w := in[i+1]
		if g.Offset != int64(1001+i) || g.Topic != "src" || g.Partition != 2 || !g.Timestamp.Equal(w.Timestamp) ||
			!reflect.DeepEqual(g.Key, w.Key) || !reflect.DeepEqual(g.Value, w.Value) || g.ProducerID != 99 {
			t.Errorf("record %d: %+v, want %+v", i, g, w)
		}
	}
	r.pos = 1000
	got, _, _, err = r.decode(b, nil, math.MaxInt64)
	if err != nil || len(got) != 3 || !reflect.DeepEqual(got[0].Headers, in[0].Headers) {
		t.Fatalf("decoded %+v, %v; want the first record's headers %+v", got, err, in[0].Headers)
	}
	// Credit: one record at a time, the position after it.
	r.maxRecords = 1
	got, next, _, err = r.decode(b, nil, math.MaxInt64)
	if err != nil || len(got) != 1 || next != 1001 {
		t.Fatalf("with credit 1: %d records, next %d, %v", len(got), next, err)
	}
	// A replayed tick at 1002 stops the records there, and one at the
	// batch's start stops them all.
	r.maxRecords = 10
	got, next, _, err = r.decode(b, nil, 1002)
	if err != nil || len(got) != 2 || next != 1002 {
		t.Fatalf("stopping at 1002: %d records, next %d, %v", len(got), next, err)
	}
	r.pos = 1000
	got, next, _, err = r.decode(b, nil, 1000)
	if err != nil || len(got) != 0 || next != 1000 {
		t.Fatalf("stopping at 1000: %d records, next %d, %v", len(got), next, err)
	}
	// An aborted transaction's batch is skipped whole.
	got, next, _, err = r.decode(b, []store.AbortedTxn{{ProducerID: 99, FirstOffset: 990, LastOffset: 1005}}, math.MaxInt64)
	if err != nil || len(got) != 3 || next != 1003 {
		t.Fatalf("a plain batch of an aborting producer: %d records, next %d, %v", len(got), next, err)
	}
}

// TestNumberAfterRestart: output is numbered from the committed
// sequences, and what a target already holds (its last sequence of the
// producer, after a restart) is dropped, once.
func TestNumberAfterRestart(t *testing.T) {
	im := image.Empty()
	im, err := im.Apply(1, &image.CreateTopic{Name: "out", ID: image.TopicID{1}, Partitions: []image.Partition{{Index: 0}, {Index: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := partition.Key{Topic: "out", Partition: 0}, partition.Key{Topic: "out", Partition: 1}
	r := &runner{cfg: &Config{Image: func() *image.Image { return im }}, key: runnerKey{"i", "src", 0},
		next: map[partition.Key]int32{a: 10, b: 0}, written: map[partition.Key]int32{a: 12}}
	rec := func(v string) Record { return Record{Value: []byte(v)} }
	batches, missing := r.number([]emitted{{"out", 0, rec("a10")}, {"out", 1, rec("b0")}, {"out", 0, rec("a11")}, {"out", 0, rec("a12")}})
	if missing != "" {
		t.Fatalf("missing %q", missing)
	}
	if got := batches[a]; got.baseSeq != 12 || len(got.records) != 1 || string(got.records[0].Value) != "a12" {
		t.Fatalf("target a: %+v", got)
	}
	if got := batches[b]; got.baseSeq != 0 || len(got.records) != 1 {
		t.Fatalf("target b: %+v", got)
	}
	if r.next[a] != 13 || r.next[b] != 1 || len(r.written) != 0 {
		t.Fatalf("next %v, written %v", r.next, r.written)
	}
	if _, missing := r.number([]emitted{{"nowhere", -1, rec("x")}}); missing != "the output topic nowhere does not exist" {
		t.Fatalf("missing %q", missing)
	}
	if _, missing := r.number([]emitted{{"out", 2, rec("x")}}); missing != "the output topic out has no partition 2" {
		t.Fatalf("missing %q", missing)
	}
}

func TestTopicMatcher(t *testing.T) {
	m, err := NewTopicMatcher("orders, audit-.*,__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"orders": true, "orders2": false, "audit-1": true, "audit": false,
		"__consumer_offsets": true, "__transaction_state": false, "x.orders": false} {
		if m.Match(topic) != want {
			t.Errorf("Match(%q) = %v", topic, !want)
		}
	}
	m, _ = NewTopicMatcher(".*")
	if m.Match("__transaction_state") || !m.Match("anything") {
		t.Error(".* matches internal topics, or not others")
	}
	for _, bad := range []string{"", " , ", "a,(b"} {
		if _, err := NewTopicMatcher(bad); err == nil {
			t.Errorf("NewTopicMatcher(%q) took it", bad)
		}
	}
}

func TestKindResolve(t *testing.T) {
	k := &Kind{Name: "k", Settings: []Setting{{Name: "a", Default: "1"}, {Name: "b", Required: true}}}
	got, err := k.Resolve(map[string]string{"source.topics": "t", "b": "x"})
	want := map[string]string{"source.topics": "t", "source.start": "earliest", "source.bootstrap.servers": "", "output.transactions": "false", "a": "1", "b": "x"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Resolve: %v, %v; want %v", got, err, want)
	}
	for _, c := range []struct {
		settings map[string]string
		msg      string
	}{
		{map[string]string{"source.topics": "t"}, "needs the setting b"},
		{map[string]string{"source.topics": "t", "b": "x", "c": "y"}, "takes no setting c"},
		{map[string]string{"b": "x"}, "needs the setting source.topics"},
		{map[string]string{"source.topics": "(", "b": "x"}, "neither a topic name nor a regular expression"},
		{map[string]string{"source.topics": "t", "b": "x", "source.start": "now"}, "earliest or latest"},
	} {
		if _, err := k.Resolve(c.settings); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Resolve(%v): %v, want %q", c.settings, err, c.msg)
		}
	}
}

// TestPartSize: a target's output goes in batches of about batchBytes,
// a record larger than that alone.
func TestPartSize(t *testing.T) {
	small := make([]Record, 10000)
	for i := range small {
		small[i].Value = make([]byte, 100)
	}
	if n := partSize(small); n*124 > batchBytes+124 || n*124 < batchBytes-124 {
		t.Fatalf("%d records of 124 bytes in a batch, want about %d", n, batchBytes/124)
	}
	big := []Record{{Value: make([]byte, 2*batchBytes)}, {Value: []byte("x")}}
	if n := partSize(big); n != 1 {
		t.Fatalf("a record of twice batchBytes shares its batch with %d others", n-1)
	}
	if n := partSize(small[:3]); n != 3 {
		t.Fatalf("3 small records: %d in the batch", n)
	}
}
