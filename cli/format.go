package cli

// The record format of skein consume -f: rpk's and kcat's %-verbs.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// formatHelp documents -f; the verbs are rpk's (kcat's differ only in %s
// for the value and %T for the timestamp).
const formatHelp = `-f FORMAT prints each record as FORMAT, with these verbs:
  %t  topic             %k  key               %v  value
  %p  partition         %o  offset            %d  timestamp (unix ms)
  %e  leader epoch      %h  headers, as k1=v1,k2=v2
  %K  key length        %V  value length      %H  number of headers
  %%  a percent sign
and the escapes \n (newline), \t (tab), \r, \\ and \0. No newline is added,
so end FORMAT with \n for one record per line; the default is '%v\n'. A
missing key prints as nothing.`

// formatEscapes are the backslash escapes of -f, for shells that pass \n
// through as two characters.
var formatEscapes = map[byte]byte{'n': '\n', 't': '\t', 'r': '\r', '\\': '\\', '0': 0}

// recordFormat is a parsed -f FORMAT: literal text and verbs, in order.
type recordFormat []formatPart

type formatPart struct {
	literal string
	verb    byte // 0 for literal
}

// parseFormat parses FORMAT, refusing an unknown verb or escape so that a
// typo shows at once rather than in every line.
func parseFormat(s string) (recordFormat, error) {
	var (
		f   recordFormat
		lit strings.Builder
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '%', '\\':
			if i+1 == len(s) {
				return nil, fmt.Errorf("format %q: %c at the end", s, c)
			}
			i++
			n := s[i]
			if c == '\\' {
				e, ok := formatEscapes[n]
				if !ok {
					return nil, fmt.Errorf("format %q: unknown escape \\%c", s, n)
				}
				lit.WriteByte(e)
				continue
			}
			if n == '%' {
				lit.WriteByte('%')
				continue
			}
			if !strings.ContainsRune("tkvpodehKVH", rune(n)) {
				return nil, fmt.Errorf("format %q: unknown verb %%%c", s, n)
			}
			if lit.Len() > 0 {
				f = append(f, formatPart{literal: lit.String()})
				lit.Reset()
			}
			f = append(f, formatPart{verb: n})
		default:
			lit.WriteByte(c)
		}
	}
	if lit.Len() > 0 {
		f = append(f, formatPart{literal: lit.String()})
	}
	return f, nil
}

// append appends r formatted to b.
func (f recordFormat) append(b []byte, r *kgo.Record) []byte {
	for _, p := range f {
		switch p.verb {
		case 0:
			b = append(b, p.literal...)
		case 't':
			b = append(b, r.Topic...)
		case 'k':
			b = append(b, r.Key...)
		case 'v':
			b = append(b, r.Value...)
		case 'p':
			b = strconv.AppendInt(b, int64(r.Partition), 10)
		case 'o':
			b = strconv.AppendInt(b, r.Offset, 10)
		case 'd':
			b = strconv.AppendInt(b, r.Timestamp.UnixMilli(), 10)
		case 'e':
			b = strconv.AppendInt(b, int64(r.LeaderEpoch), 10)
		case 'h':
			for i, h := range r.Headers {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, h.Key...)
				b = append(b, '=')
				b = append(b, h.Value...)
			}
		case 'K':
			b = strconv.AppendInt(b, int64(len(r.Key)), 10)
		case 'V':
			b = strconv.AppendInt(b, int64(len(r.Value)), 10)
		case 'H':
			b = strconv.AppendInt(b, int64(len(r.Headers)), 10)
		}
	}
	return b
}
