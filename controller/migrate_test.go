package controller

import (
	"encoding/binary"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/clock"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition/store"
)

// writeOldLog writes commands as a Skein before the quorum did: one
// batch per command, a record per image.Record keyed by its type.
func writeOldLog(t *testing.T, fs vfs.FS, dir string, commands ...[]image.Record) {
	t.Helper()
	l, err := openMetadataLog(fs, dir, clock.Real)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, records := range commands {
		recs := make([]store.Record, len(records))
		for i, r := range records {
			body, err := msgpack.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			recs[i] = store.Record{OffsetDelta: int32(i), Key: binary.BigEndian.AppendUint16(nil, uint16(r.Type())), Value: body}
		}
		h := store.Header{LastOffsetDelta: int32(len(recs) - 1), ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}
		b, err := store.AppendBatch(nil, h, recs, store.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		res, err := l.Append(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SyncTo(res.LastOffset + 1); err != nil {
			t.Fatal(err)
		}
	}
}

// A data directory written before the quorum keeps its metadata: the old
// log becomes the quorum's first snapshot, and commands go on from there,
// across restarts.
func TestMigratesAnOlderMetadataLog(t *testing.T) {
	fs := vfs.NewCrashableMem()
	id := image.TopicID{7}
	writeOldLog(t, fs, "/data/__cluster_metadata-0",
		[]image.Record{&image.Cluster{ClusterID: "old-cluster"}, &image.RegisterBroker{ID: 1, Host: "127.0.0.1", Port: 9092}},
		[]image.Record{&image.CreateTopic{Name: "orders", ID: id, Partitions: []image.Partition{{Index: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}}},
		[]image.Record{&image.AllocateProducerIDs{First: 0, Size: ProducerIDBlockSize}},
	)
	h := newHarness(t, fs)
	res := h.ask(&AllocateProducerIDs{}).(*AllocateProducerIDsResult)
	if res.Err != nil || res.First != ProducerIDBlockSize {
		t.Fatalf("allocated %+v after migration; ids below %d were handed out before", res, ProducerIDBlockSize)
	}
	check := func() {
		t.Helper()
		im := h.latest.Load()
		if im.ClusterID != "old-cluster" || im.Topic("orders") == nil || im.Topic("orders").ID != id {
			t.Fatalf("image after migration: cluster %q, orders %+v", im.ClusterID, im.Topic("orders"))
		}
	}
	check()
	h.ask(&CreateTopics{Topics: []NewTopic{{Name: "later", NumPartitions: 1, ReplicationFactor: 1}}})
	h.stop()
	h.spawn()
	h.ask(&AllocateProducerIDs{})
	check()
	if h.latest.Load().Topic("later") == nil {
		t.Fatal("a topic created after the migration is lost on restart")
	}
}
