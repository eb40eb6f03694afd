package partition

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition/store"
)

// Rejection says why a partition's records in a Produce request are
// refused; nothing of them is appended.
type Rejection struct {
	Err     *kerr.Error
	Message string
	// Record is the index in its batch of the record at fault, for
	// Produce's per-record errors, or -1 when the batch as a whole is.
	Record int32
	// Contents: the batch's contents are at fault (step 3 of Validate),
	// which Kafka's log refuses, answering with the partition's log start
	// offset; the framing, size and CRC are refused before, with -1.
	Contents bool
}

// Validate checks the records of one partition in a Produce request against
// the topic's configs, on the caller's goroutine (transport's connection
// goroutine, so CRC checks run in parallel across connections). Produce v3+
// carries exactly one RecordBatch v2 per partition, as Kafka requires.
//
// The checks come in Kafka's order, and with its codes, so that a batch
// wrong in several ways gets Kafka's answer (tests/diff compares them):
//  1. the framing (Kafka's ProduceRequest.validateRecords): no whole batch,
//     a magic of 0 or 1, or more than one batch is INVALID_RECORD; a batch
//     length below the smallest record's or a magic above 2 is
//     CORRUPT_MESSAGE;
//  2. the size against max.message.bytes (MESSAGE_TOO_LARGE), then the CRC
//     (CORRUPT_MESSAGE);
//  3. the batch's contents (Kafka's LogValidator): a base offset other than
//     0, counts, control and sequence fields, the records (INVALID_RECORD).
func Validate(records []byte, cfg configs.Topic, dec *store.Decompressor) (store.Header, *Rejection) {
	if r := validateFraming(records); r != nil {
		return store.Header{}, r
	}
	h, err := store.ValidateProduced(records, store.ValidateOptions{
		MaxBatchBytes: int(cfg.MaxMessageBytes),
		RequireKeys:   cfg.CleanupPolicy.Compact,
	}, dec)
	if err == nil && h.BaseOffset != 0 {
		err = fmt.Errorf("%w: the base offset of a produced batch must be 0, not %d", store.ErrInvalidRecord, h.BaseOffset)
	}
	if err != nil {
		r := &Rejection{Err: validationError(err), Message: err.Error(), Record: -1}
		r.Contents = r.Err == kerr.InvalidRecord
		var re *store.RecordError
		if errors.As(err, &re) {
			r.Record = re.Index
		}
		return h, r
	}
	return h, nil
}

// Kafka's framing: a batch's length field is at byte 8, its magic at byte
// 16; the length counts from byte 12 and is at least the 14 bytes of the
// smallest legacy record (LegacyRecord.RECORD_OVERHEAD_V0).
const (
	logOverhead    = 12
	magicOffset    = 16
	minBatchLength = 14
)

// validateFraming is Kafka's ProduceRequest.validateRecords over its
// ByteBufferLogInputStream: Kafka reads a batch only when its whole length
// is there, so a short or truncated record set holds no batch at all
// (INVALID_RECORD); a length below the smallest record's or a magic
// outside 0-2 is corrupt (CORRUPT_MESSAGE), checked as soon as the bytes
// that hold it are there.
func validateFraming(records []byte) *Rejection {
	invalid := func(msg string) *Rejection { return &Rejection{Err: kerr.InvalidRecord, Message: msg, Record: -1} }
	corrupt := func(msg string) *Rejection { return &Rejection{Err: kerr.CorruptMessage, Message: msg, Record: -1} }
	noBatch := invalid("Produce requests with version 3 and above must have at least one record batch per partition")
	if len(records) < logOverhead {
		return noBatch
	}
	length := int64(int32(binary.BigEndian.Uint32(records[8:])))
	if length < minBatchLength {
		return corrupt(fmt.Sprintf("Record size %d is less than the minimum record overhead (%d)", length, minBatchLength))
	}
	if len(records) <= magicOffset {
		return noBatch
	}
	magic := int8(records[magicOffset])
	switch size := logOverhead + length; {
	case magic < 0 || magic > 2:
		return corrupt(fmt.Sprintf("Invalid magic found in record: %d", magic))
	case size > int64(len(records)):
		return noBatch
	case magic != 2:
		return invalid(fmt.Sprintf("Produce requests with version 3 and above are only allowed to contain record batches with magic version 2, not %d", magic))
	case size < int64(len(records)):
		return invalid("Produce requests with version 3 and above may contain exactly one record batch per partition")
	}
	return nil
}

func validationError(err error) *kerr.Error {
	switch {
	case errors.Is(err, store.ErrMessageTooLarge):
		return kerr.MessageTooLarge
	case errors.Is(err, store.ErrInvalidRecord):
		return kerr.InvalidRecord
	}
	return kerr.CorruptMessage
}
