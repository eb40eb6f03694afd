package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is: the store wraps them with
// context (the file, the offset, the reason).
var (
	// ErrCorrupt marks data that fails validation: a bad CRC, a length that
	// does not add up, a wrong magic byte. From a producer it maps to Kafka's
	// CORRUPT_MESSAGE; from a segment file it means recovery truncates there.
	// It is never a disk failure: those are returned as the filesystem's errors.
	ErrCorrupt = errors.New("store: corrupt record batch")
	// ErrInvalidRecord marks a well-formed batch the broker refuses: a record
	// count that disagrees with the last offset delta, a keyless record on a
	// compacted topic. It maps to Kafka's INVALID_RECORD.
	ErrInvalidRecord = errors.New("store: invalid record")
	// ErrMessageTooLarge marks a batch larger than max.message.bytes. It maps
	// to Kafka's MESSAGE_TOO_LARGE.
	ErrMessageTooLarge = errors.New("store: record batch too large")
	// ErrOffsetOutOfRange marks a read below the log start offset or beyond
	// the log end offset. It maps to Kafka's OFFSET_OUT_OF_RANGE.
	ErrOffsetOutOfRange = errors.New("store: offset out of range")
	// ErrClosed is returned by a log that has been closed.
	ErrClosed = errors.New("store: log closed")
	// ErrFailed is returned by every write to a log after a write or sync
	// failed: what was not synced may be lost, so the log accepts nothing
	// more until it is reopened (and recovered) from disk.
	ErrFailed = errors.New("store: log failed")
)

// corruptf returns an error that wraps ErrCorrupt.
func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// invalidf returns an error that wraps ErrInvalidRecord.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
}

// RecordError is an error about one record of a batch: Kafka answers it in
// Produce's per-record errors (ErrorRecords), with the record's index. It
// unwraps to the error class (ErrInvalidRecord).
type RecordError struct {
	Index int32 // the record's position in its batch
	Err   error
}

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }
