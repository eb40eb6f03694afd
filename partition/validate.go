package partition

import (
	"errors"

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
}

// Validate checks the records of one partition in a Produce request against
// the topic's configs, on the caller's goroutine (transport's connection
// goroutine, so CRC checks run in parallel across connections). Produce v3+
// carries exactly one RecordBatch v2 per partition, as Kafka requires.
func Validate(records []byte, cfg configs.Topic, dec *store.Decompressor) (store.Header, *Rejection) {
	if len(records) < store.HeaderSize {
		return store.Header{}, &Rejection{Err: kerr.CorruptMessage, Message: "record set shorter than a batch header", Record: -1}
	}
	h, err := store.ValidateProduced(records, store.ValidateOptions{
		MaxBatchBytes: int(cfg.MaxMessageBytes),
		RequireKeys:   cfg.CleanupPolicy.Compact,
	}, dec)
	if err != nil {
		r := &Rejection{Err: validationError(err), Message: err.Error(), Record: -1}
		var re *store.RecordError
		if errors.As(err, &re) {
			r.Record = re.Index
		}
		return h, r
	}
	if h.Size() != int64(len(records)) {
		return h, &Rejection{Err: kerr.InvalidRecord, Message: "Produce requests with version 3 and above may contain exactly one record batch per partition", Record: -1}
	}
	return h, nil
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
