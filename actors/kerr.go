package actors

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// Messages between nodes hold Kafka errors as kerr's values, which their
// receivers compare by identity: a *kerr.Error travels as its code and
// comes back as kerr's own value for it (UNKNOWN_SERVER_ERROR for a code
// this binary does not know).
func init() {
	msgpack.Register((*kerr.Error)(nil), encodeKafkaError, decodeKafkaError)
}

func encodeKafkaError(e *msgpack.Encoder, v reflect.Value) error {
	if v.IsNil() {
		return e.EncodeNil()
	}
	return e.EncodeInt16(v.Interface().(*kerr.Error).Code)
}

func decodeKafkaError(d *msgpack.Decoder, v reflect.Value) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		v.Set(reflect.Zero(v.Type()))
		return d.DecodeNil()
	}
	code, err := d.DecodeInt16()
	if err != nil {
		return err
	}
	ke, _ := kerr.ErrorForCode(code).(*kerr.Error)
	if ke == nil {
		ke = kerr.UnknownServerError
	}
	v.Set(reflect.ValueOf(ke))
	return nil
}
