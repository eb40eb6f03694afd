package partition

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/partition/store"
)

// Validate checks the records of one partition in a Produce request against
// the topic's configs, on the caller's goroutine (transport's connection
// goroutine, so CRC checks run in parallel across connections). Produce v3+
// carries exactly one RecordBatch v2 per partition, as Kafka requires.
func Validate(records []byte, cfg configs.Topic, dec *store.Decompressor) (store.Header, *kerr.Error, string) {
	if len(records) < store.HeaderSize {
		return store.Header{}, kerr.CorruptMessage, "record set shorter than a batch header"
	}
	h, err := store.ValidateProduced(records, store.ValidateOptions{
		MaxBatchBytes: int(cfg.MaxMessageBytes),
		RequireKeys:   cfg.CleanupPolicy.Compact,
	}, dec)
	if err != nil {
		return h, validationError(err), err.Error()
	}
	if h.Size() != int64(len(records)) {
		return h, kerr.InvalidRecord, "Produce requests with version 3 and above may contain exactly one record batch per partition"
	}
	return h, nil, ""
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
