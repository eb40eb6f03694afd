package library

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "dedupe",
		Doc:  "copies records to a topic, dropping those whose key (or a header) was seen within a window of record time",
		Settings: []extension.Setting{
			{Name: "target.topic", Required: true, Doc: "where the records that are not duplicates go"},
			{Name: "dedupe.by", Default: "key", Doc: "what identifies a record: key, or header:NAME; a record without it is never a duplicate"},
			{Name: "window.ms", Default: "600000", Doc: "a record is a duplicate of one seen less than this long before it, by their timestamps"},
			partitioning,
		},
		State: true,
		New:   newDedupe,
	})
}

// dedupe drops a record whose id was copied less than the window before
// it, by record timestamps (so that processing the same records again
// decides the same): in the partition's order, each record first forgets
// the ids copied a window or more before its own time, then is dropped if
// its id is still remembered with a time less than a window before its
// own, else copied and its id remembered with its time. Its state is the
// remembered ids.
type dedupe struct {
	target    string
	header    string // "" for the key
	window    int64  // ms
	partition int32
	seen      map[string]int64
	// order holds the ids by the time they were last seen, oldest first
	// (ties by id), for expiry; an entry whose time no longer matches seen
	// is stale. Sorted, not in arrival order: the expiry must decide the
	// same after a restart, when order is rebuilt from the state.
	order []seenAt
}

type seenAt struct {
	id string
	ts int64
}

func newDedupe(in extension.Instance) (extension.Extension, error) {
	target, err := targetOf(in)
	if err != nil {
		return nil, err
	}
	p, err := partitionOf(in)
	if err != nil {
		return nil, err
	}
	d := &dedupe{target: target, partition: p, seen: map[string]int64{}}
	switch by := in.Settings["dedupe.by"]; {
	case by == "key":
	case strings.HasPrefix(by, "header:") && len(by) > len("header:"):
		d.header = strings.TrimPrefix(by, "header:")
	default:
		return nil, fmt.Errorf("dedupe.by is %q; it takes key or header:NAME", by)
	}
	w, err := strconv.ParseInt(in.Settings["window.ms"], 10, 64)
	if err != nil || w <= 0 {
		return nil, fmt.Errorf("window.ms is %q; it takes a positive number of milliseconds", in.Settings["window.ms"])
	}
	d.window = w
	for id, v := range in.State {
		if len(v) == 8 {
			ts := int64(binary.BigEndian.Uint64(v))
			d.seen[id] = ts
			d.order = append(d.order, seenAt{id, ts})
		}
	}
	slices.SortFunc(d.order, compareSeen)
	return d, nil
}

func compareSeen(a, b seenAt) int {
	if a.ts != b.ts {
		return cmp.Compare(a.ts, b.ts)
	}
	return strings.Compare(a.id, b.id)
}

func (d *dedupe) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		ts := r.Timestamp.UnixMilli()
		d.expire(ts, out)
		id, ok := d.idOf(&r)
		if !ok {
			out.Emit(d.target, d.partition, r)
			continue
		}
		if last, seen := d.seen[id]; seen && ts-last < d.window {
			continue
		}
		out.Emit(d.target, d.partition, r)
		d.seen[id] = ts
		e := seenAt{id, ts}
		i, _ := slices.BinarySearchFunc(d.order, e, compareSeen)
		d.order = slices.Insert(d.order, i, e)
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], uint64(ts))
		out.Put(id, v[:])
	}
	return nil
}

// expire forgets the ids last seen a window or more before now.
func (d *dedupe) expire(now int64, out extension.Output) {
	n := 0
	for _, e := range d.order {
		if now-e.ts < d.window {
			break
		}
		n++
		if d.seen[e.id] == e.ts {
			delete(d.seen, e.id)
			out.Delete(e.id)
		}
	}
	d.order = d.order[n:]
}

func (d *dedupe) idOf(r *extension.Record) (string, bool) {
	if d.header == "" {
		return string(r.Key), r.Key != nil
	}
	for _, h := range r.Headers {
		if h.Key == d.header {
			return string(h.Value), true
		}
	}
	return "", false
}
