package console

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The message browser's bounds.
const (
	defaultLimit = 50
	maxLimit     = 500
	// maxShown is the most bytes of a key, value or header value
	// answered; the rest is cut and the record marked truncated.
	maxShown = 64 << 10
	// maxScanRecords and maxScanBytes bound a key lookup's reading of its
	// partition; what lies beyond is not searched ("complete": false).
	maxScanRecords = 200_000
	maxScanBytes   = 256 << 20
)

type messagesJSON struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	StartOffset int64  `json:"start_offset"`
	EndOffset   int64  `json:"end_offset"`
	// From is the offset the read began at.
	From    int64         `json:"from"`
	Records []*recordJSON `json:"records"`
	// Scanned counts the records read (a key lookup reads more than it
	// answers); Complete is whether the read reached end_offset or the
	// limit, rather than stopping at the deadline or the scan bounds.
	Scanned  int  `json:"scanned"`
	Complete bool `json:"complete"`
	// NextOffset is where the next page begins.
	NextOffset int64 `json:"next_offset"`
	// Key is the key looked up, when one was.
	Key *string `json:"key,omitempty"`
}

type recordJSON struct {
	Partition     int32        `json:"partition"`
	Offset        int64        `json:"offset"`
	Timestamp     int64        `json:"timestamp"`
	Key           *string      `json:"key"`
	KeyEncoding   string       `json:"key_encoding,omitempty"`
	Value         *string      `json:"value"`
	ValueEncoding string       `json:"value_encoding,omitempty"`
	Headers       []headerJSON `json:"headers"`
	Truncated     bool         `json:"truncated"`
}

type headerJSON struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// messages is GET /ui/api/messages.
func (a *api) messages(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	topic := q.Get("topic")
	if topic == "" {
		writeError(w, http.StatusBadRequest, "console: topic is required")
		return
	}
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "console: limit must be a positive number")
			return
		}
		limit = min(n, maxLimit)
	}
	decode := q.Get("decode")
	switch decode {
	case "":
		decode = "text"
	case "text", "json", "hex":
	default:
		writeError(w, http.StatusBadRequest, "console: decode is text, json or hex")
		return
	}
	_, byKey := q["key"]
	var offset, timestamp int64
	var byOffset, byTime bool
	if s := q.Get("offset"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "console: offset must be a number")
			return
		}
		offset, byOffset = n, true
	}
	if s := q.Get("timestamp"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "console: timestamp must be milliseconds since the epoch")
			return
		}
		timestamp, byTime = n, true
	}
	if byKey && (byOffset || byTime) || byOffset && byTime {
		writeError(w, http.StatusBadRequest, "console: give one of offset, timestamp and key")
		return
	}
	ctx, cancel, adm, ok := a.admin(w, r)
	if !ok {
		return
	}
	defer cancel()
	details, err := adm.ListTopics(ctx, topic)
	d, ok := oneTopic(w, details, err, topic)
	if !ok {
		return
	}
	out := &messagesJSON{Topic: topic, Records: []*recordJSON{}}
	if byKey {
		key := q.Get("key")
		out.Key = &key
		// The partition Kafka's default partitioner gives the key: murmur2,
		// as kgo's and Java's producers do.
		out.Partition = int32(kgo.StickyKeyPartitioner(nil).ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, len(d.Partitions)))
	} else {
		p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
		if err != nil {
			writeError(w, http.StatusBadRequest, "console: partition is required (a number) unless key is given")
			return
		}
		out.Partition = int32(p)
		if _, ok := d.Partitions[out.Partition]; !ok {
			fail(w, kerr.UnknownTopicOrPartition)
			return
		}
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		fail(w, err)
		return
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		fail(w, err)
		return
	}
	s, _ := starts.Lookup(topic, out.Partition)
	e, _ := ends.Lookup(topic, out.Partition)
	out.StartOffset, out.EndOffset = s.Offset, e.Offset
	switch {
	case byKey:
		out.From = out.StartOffset
	case byTime:
		at, err := adm.ListOffsetsAfterMilli(ctx, timestamp, topic)
		if err != nil {
			fail(w, err)
			return
		}
		o, ok := at.Lookup(topic, out.Partition)
		if !ok || o.Err != nil {
			fail(w, errors.Join(o.Err, errors.New("console: the partition's offset by time is not known")))
			return
		}
		out.From = o.Offset
		if o.Offset < 0 { // no record at or after the time
			out.From = out.EndOffset
		}
	case byOffset && offset < 0:
		out.From = out.EndOffset + offset
	case byOffset:
		out.From = offset
	default:
		out.From = out.StartOffset
	}
	out.From = max(out.From, out.StartOffset)
	out.NextOffset = out.From
	if out.From >= out.EndOffset {
		out.Complete = true
		writeJSON(w, http.StatusOK, out)
		return
	}
	cl, _ := a.cfg.Client(r)
	var match func(*kgo.Record) bool
	if byKey {
		key := []byte(*out.Key)
		match = func(rec *kgo.Record) bool { return bytes.Equal(rec.Key, key) }
	}
	if err := read(ctx, cl, out, limit, decode, match); err != nil {
		fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// read reads out's partition from out.From up to out.EndOffset, the end
// seen when the request began, with a consumer of its own that acts as
// cl's user (read_uncommitted, control records kept so that the read
// knows it reached a transaction marker at the end), until limit records
// match, the end, the scan bounds or ctx's deadline.
func read(ctx context.Context, cl *kgo.Client, out *messagesJSON, limit int, decode string, match func(*kgo.Record) bool) error {
	consumer, err := kgo.NewClient(append(cl.Opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{out.Topic: {out.Partition: kgo.NewOffset().At(out.From)}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(250*time.Millisecond),
		kgo.FetchMaxBytes(16<<20),
		kgo.FetchMaxPartitionBytes(8<<20),
	)...)
	if err != nil {
		return err
	}
	defer consumer.Close()
	var scannedBytes int
	for {
		fetches := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil // the deadline: answer what was read
		}
		for _, fe := range fetches.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				return nil
			}
			var ke *kerr.Error
			if errors.As(fe.Err, &ke) {
				return fe.Err
			}
		}
		done := false
		fetches.EachRecord(func(rec *kgo.Record) {
			if done || rec.Offset >= out.EndOffset {
				done = true
				return
			}
			out.NextOffset = rec.Offset + 1
			if rec.Attrs.IsControl() {
				return
			}
			out.Scanned++
			scannedBytes += len(rec.Key) + len(rec.Value)
			if match == nil || match(rec) {
				out.Records = append(out.Records, recordOf(rec, decode))
			}
			if len(out.Records) >= limit {
				done = true
			}
		})
		if done || out.NextOffset >= out.EndOffset {
			out.Complete = true
			return nil
		}
		if out.Scanned >= maxScanRecords || scannedBytes >= maxScanBytes {
			return nil
		}
	}
}

// recordOf renders a record as decode says: text, json or hex.
func recordOf(rec *kgo.Record, decode string) *recordJSON {
	j := &recordJSON{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Headers: []headerJSON{}}
	var cut bool
	j.Key, j.KeyEncoding, cut = render(rec.Key, decode)
	j.Truncated = j.Truncated || cut
	j.Value, j.ValueEncoding, cut = render(rec.Value, decode)
	j.Truncated = j.Truncated || cut
	for _, h := range rec.Headers {
		hj := headerJSON{Key: h.Key}
		hj.Value, hj.ValueEncoding, cut = render(h.Value, decode)
		j.Truncated = j.Truncated || cut
		j.Headers = append(j.Headers, hj)
	}
	return j
}

// render returns b as decode asks: hex; json, indented, when it is JSON
// (else as text); text when it is UTF-8, else hex. At most maxShown
// bytes are rendered (cut says so); nil stays nil (no key, a
// tombstone).
func render(b []byte, decode string) (s *string, encoding string, cut bool) {
	if b == nil {
		return nil, "", false
	}
	if len(b) > maxShown {
		b, cut = b[:maxShown], true
	}
	out := func(v, enc string) (*string, string, bool) { return &v, enc, cut }
	if decode == "json" && !cut && json.Valid(b) {
		var buf bytes.Buffer
		if json.Indent(&buf, b, "", "  ") == nil {
			return out(buf.String(), "json")
		}
	}
	if decode != "hex" {
		text := b
		if cut { // a rune the cut split is not the value's fault
			for i := 0; i < utf8.UTFMax && len(text) > 0 && !utf8.Valid(text); i++ {
				text = text[:len(text)-1]
			}
		}
		if utf8.Valid(text) {
			return out(string(text), "text")
		}
	}
	return out(hex.EncodeToString(b), "hex")
}
