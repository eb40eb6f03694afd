package partition

import "github.com/skeinlog/skein/partition/store"

// OffsetsTopic is the internal compacted topic holding the groups'
// committed offsets and metadata; a transaction that commits offsets
// writes markers to it too.
const OffsetsTopic = "__consumer_offsets"

// ForKey returns the partition of an internal topic that holds a key (a
// group id in __consumer_offsets, a transactional id in
// __transaction_state), as Kafka computes it: abs(key.hashCode()) %
// partitions, with Java's String.hashCode over UTF-16 code units and Kafka's
// Utils.abs (which maps MinInt32 to 0). The node leading that partition
// coordinates the key.
func ForKey(key string, partitions int32) int32 {
	var h int32
	for _, r := range key {
		if r >= 0x10000 { // a surrogate pair in UTF-16
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}

// ScanLog reads a log view from its start to its end, as a coordinator
// loading its state from an internal topic does: record is called with
// every record of a data batch, in order, and marker with every
// transaction marker (nil: skipped). The record's bytes are only valid
// during the call.
func ScanLog(v *store.View, record func(h *store.Header, r *store.Record) error, marker func(m Marker) error) error {
	dec := store.NewDecompressor()
	for off := v.LogStartOffset; off < v.LogEndOffset; {
		b, err := v.ReadBytes(off, store.ReadOptions{MaxBytes: 1 << 20, MaxOffset: v.LogEndOffset, MinOneBatch: true})
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		err = store.ForEachBatch(b, func(batch []byte, h store.Header) error {
			off = h.NextOffset()
			if h.Control() {
				m, ok, err := ParseMarker(batch, dec)
				if err != nil || !ok || marker == nil {
					return err
				}
				return marker(m)
			}
			return store.ForEachRecord(batch, dec, func(r *store.Record) error { return record(&h, r) })
		})
		if err != nil {
			return err
		}
	}
	return nil
}
