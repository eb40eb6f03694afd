package controller

import (
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/internal/vfs"
)

// TestAlterExtensions: instances are created, refused when they exist
// (unless replaced), replaced, deleted, and survive restarts, from the log
// and from a snapshot; a replace with the same definition writes nothing.
func TestAlterExtensions(t *testing.T) {
	h := newHarness(t, vfs.NewCrashableMem())
	alter := func(m *AlterExtensions) *AlterExtensionsResult {
		t.Helper()
		return h.ask(m).(*AlterExtensionsResult)
	}
	mirror := &image.Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}
	if r := alter(&AlterExtensions{Set: mirror}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	if got := h.latest.Load().Extensions["mirror"]; got == nil || !got.Equal(mirror) {
		t.Fatalf("after create: %+v", got)
	}

	for _, tc := range []struct {
		name string
		m    *AlterExtensions
		err  *kerr.Error
		msg  string
	}{
		{"exists", &AlterExtensions{Set: &image.Extension{Name: "mirror", Kind: "other"}}, kerr.DuplicateResource, `extension "mirror" exists`},
		{"missing", &AlterExtensions{Delete: "nope"}, kerr.ResourceNotFound, `no extension "nope"`},
		{"empty name", &AlterExtensions{Set: &image.Extension{Kind: "copy"}}, kerr.InvalidRequest, "Extension name is illegal, it can't be empty"},
		{"bad name", &AlterExtensions{Set: &image.Extension{Name: "a/b", Kind: "copy"}}, kerr.InvalidRequest, `Extension name "a/b" is illegal`},
		{"long name", &AlterExtensions{Set: &image.Extension{Name: strings.Repeat("x", 250), Kind: "copy"}}, kerr.InvalidRequest, "can't be longer than 249 characters"},
		{"no kind", &AlterExtensions{Set: &image.Extension{Name: "k"}}, kerr.InvalidRequest, `extension "k" names no kind`},
		{"neither", &AlterExtensions{}, kerr.InvalidRequest, "give one extension"},
		{"both", &AlterExtensions{Set: mirror, Delete: "mirror"}, kerr.InvalidRequest, "give one extension"},
	} {
		if r := alter(tc.m); r.Err != tc.err || !strings.Contains(r.Message, tc.msg) {
			t.Errorf("%s: %v %q, want %v %q", tc.name, r.Err, r.Message, tc.err, tc.msg)
		}
	}
	if got := h.latest.Load().Extensions["mirror"]; !got.Equal(mirror) {
		t.Fatalf("a refused change altered the instance: %+v", got)
	}

	// The same definition again, replacing: nothing to write.
	before := h.latest.Load().Offset
	same := &image.Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}
	if r := alter(&AlterExtensions{Set: same, Replace: true}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	h.ask(&AllocateProducerIDs{}) // one record after whatever the replace wrote
	if after := h.latest.Load().Offset; after != before+1 {
		t.Errorf("an identical replace wrote records: offset %d to %d", before, after)
	}
	changed := &image.Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "payments"}}
	if r := alter(&AlterExtensions{Set: changed, Replace: true}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	if r := alter(&AlterExtensions{Set: &image.Extension{Name: "fresh", Kind: "count"}, Replace: true}); r.Err != nil {
		t.Fatalf("replace of a new name: %v %s", r.Err, r.Message)
	}
	if r := alter(&AlterExtensions{Set: &image.Extension{Name: "gone", Kind: "count"}}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	if r := alter(&AlterExtensions{Delete: "gone"}); r.Err != nil {
		t.Fatal(r.Err, r.Message)
	}
	want := map[string]*image.Extension{"mirror": changed, "fresh": {Name: "fresh", Kind: "count"}}
	check := func(when string) {
		t.Helper()
		got := h.latest.Load().Extensions
		if len(got) != len(want) {
			t.Fatalf("%s: %v", when, got)
		}
		for name, w := range want {
			if !w.Equal(got[name]) {
				t.Errorf("%s: %s is %+v, want %+v", when, name, got[name], w)
			}
		}
	}
	check("before restart")

	// From the log, then from a snapshot (one taken after every entry).
	h.stop()
	h.spawn()
	h.ask(&AllocateProducerIDs{}) // a round trip: start has published by now
	check("after restart")
	h.stop()
	h.cfg.SnapshotBytes = 1
	h.spawn()
	h.ask(&AllocateProducerIDs{})
	h.stop()
	h.spawn()
	h.ask(&AllocateProducerIDs{})
	check("after restart from a snapshot")
}

// TestAlterExtensionsForwards: the command and its result travel between
// controllers (Forward, ForwardAnswer, the log's entries) as msgpack under
// their kind, and come back the same.
func TestAlterExtensionsForwards(t *testing.T) {
	m := &AlterExtensions{Set: &image.Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}, Replace: true, TimeoutMs: 5000}
	body, err := msgpack.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeCommand(m.kind(), body)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("decodeCommand = %+v, %v; want %+v", back, err, m)
	}
	res := &AlterExtensionsResult{Err: kerr.DuplicateResource, Message: "exists"}
	if body, err = msgpack.Marshal(res); err != nil {
		t.Fatal(err)
	}
	got := m.newResult()
	if err := msgpack.Unmarshal(body, got); err != nil || !reflect.DeepEqual(got, res) {
		t.Fatalf("result = %+v, %v; want %+v", got, err, res)
	}
}

// TestSnapshotExtensions: a snapshot carries the extension instances, and
// one without any (as written before they existed) gives none.
func TestSnapshotExtensions(t *testing.T) {
	im := image.Empty()
	for i, r := range []image.Record{
		&image.Cluster{ClusterID: "c"},
		&image.SetExtension{Extension: image.Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}},
		&image.SetExtension{Extension: image.Extension{Name: "audit", Kind: "count"}},
	} {
		var err error
		if im, err = im.Apply(int64(i), r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := encodeSnapshot(im, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := decodeSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Extensions, im.Extensions) {
		t.Errorf("extensions from the snapshot: %+v, want %+v", back.Extensions, im.Extensions)
	}

	recs, err := encodeRecords([]image.Record{&image.Cluster{ClusterID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	old, err := msgpack.Marshal(&snapshotData{Offset: 0, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if back, _, err = decodeSnapshot(old); err != nil || back.Extensions == nil || len(back.Extensions) != 0 {
		t.Errorf("a snapshot without extensions: %v, %v", back.Extensions, err)
	}
}
