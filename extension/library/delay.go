package library

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/skeinlog/skein/extension"
)

// HeaderDeliverAt is the header that asks the delay kind to deliver a
// record at a time: milliseconds since the Unix epoch, in decimal.
const HeaderDeliverAt = "skein-deliver-at"

func init() {
	extension.Register(extension.Kind{
		Name: "delay",
		Doc:  "delayed delivery: each record appears in the target topic at the time its skein-deliver-at header names, or delay.ms after its timestamp, in order per key",
		Settings: []extension.Setting{
			{Name: "target.topic", Required: true, Doc: "where the records are delivered"},
			{Name: "delay.ms", Default: "0", Doc: "the delay of a record without a skein-deliver-at header, from its timestamp"},
			partitioning,
		},
		State: true,
		New:   newDelay,
	})
}

// delay holds each record in its state until it is due, and delivers the
// due ones at its ticks, by due time and then source offset. A record is
// never due before an earlier record of its key: a key's records are
// delivered in their source order.
type delay struct {
	target    string
	delayMs   int64
	partition int32
	held      []held // by due time, then offset
	// keys are the held records' keys (keyOf): their latest due time and
	// how many are held.
	keys map[string]keyHeld
}

type keyHeld struct {
	due int64
	n   int
}

// keyOf tells a null key from an empty one.
func keyOf(k []byte) string {
	if k == nil {
		return ""
	}
	return "k" + string(k)
}

// held is a record waiting for its time, as the state keeps it (JSON).
type held struct {
	Offset  int64              `json:"offset"`
	Due     int64              `json:"due"` // ms since the epoch
	Time    int64              `json:"time"`
	Key     []byte             `json:"key"`
	Value   []byte             `json:"value"`
	Headers []extension.Header `json:"headers"`
}

func (h *held) stateKey() string { return fmt.Sprintf("%020d", h.Offset) }

func compareHeld(a, b held) int {
	return cmp.Or(cmp.Compare(a.Due, b.Due), cmp.Compare(a.Offset, b.Offset))
}

func newDelay(in extension.Instance) (extension.Extension, error) {
	target, err := targetOf(in)
	if err != nil {
		return nil, err
	}
	p, err := partitionOf(in)
	if err != nil {
		return nil, err
	}
	d := &delay{target: target, partition: p, keys: map[string]keyHeld{}}
	ms, err := strconv.ParseInt(in.Settings["delay.ms"], 10, 64)
	if err != nil || ms < 0 {
		return nil, fmt.Errorf("delay.ms is %q; it takes a number of milliseconds", in.Settings["delay.ms"])
	}
	d.delayMs = ms
	for k, v := range in.State {
		var h held
		if err := json.Unmarshal(v, &h); err != nil {
			return nil, fmt.Errorf("the held record %s in the state: %v", k, err)
		}
		d.held = append(d.held, h)
	}
	slices.SortFunc(d.held, compareHeld)
	for _, h := range d.held {
		k := d.keys[keyOf(h.Key)]
		d.keys[keyOf(h.Key)] = keyHeld{due: max(k.due, h.Due), n: k.n + 1}
	}
	return d, nil
}

func (d *delay) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		h := held{Offset: r.Offset, Due: r.Timestamp.UnixMilli() + d.delayMs, Time: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
		for _, x := range r.Headers {
			if x.Key == HeaderDeliverAt {
				if at, err := strconv.ParseInt(string(x.Value), 10, 64); err == nil {
					h.Due = at
				}
				continue
			}
			h.Headers = append(h.Headers, x)
		}
		// Not before an earlier record of the key.
		k := d.keys[keyOf(h.Key)]
		h.Due = max(h.Due, k.due)
		d.keys[keyOf(h.Key)] = keyHeld{due: h.Due, n: k.n + 1}
		b, err := json.Marshal(&h)
		if err != nil {
			return err
		}
		out.Put(h.stateKey(), b)
		i, _ := slices.BinarySearchFunc(d.held, h, compareHeld)
		d.held = slices.Insert(d.held, i, h)
	}
	return nil
}

// Tick delivers the records due by now.
func (d *delay) Tick(now time.Time, out extension.Output) error {
	n := 0
	for _, h := range d.held {
		if h.Due > now.UnixMilli() {
			break
		}
		out.Emit(d.target, d.partition, extension.Record{Key: h.Key, Value: h.Value, Headers: h.Headers, Timestamp: time.UnixMilli(h.Time)})
		out.Delete(h.stateKey())
		n++
		if k := d.keys[keyOf(h.Key)]; k.n > 1 {
			d.keys[keyOf(h.Key)] = keyHeld{due: k.due, n: k.n - 1}
		} else {
			delete(d.keys, keyOf(h.Key))
		}
	}
	d.held = d.held[n:]
	return nil
}
