package transport

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return strconv.Itoa(int(code))
}
