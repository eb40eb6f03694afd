package cli

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestFormat(t *testing.T) {
	rec := &kgo.Record{
		Topic: "orders", Partition: 2, Offset: 41, LeaderEpoch: 3,
		Key: []byte("k"), Value: []byte("value"),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b"}},
		Timestamp: time.UnixMilli(1717243200123),
	}
	for _, tc := range []struct{ format, want string }{
		{`%v\n`, "value\n"},
		{`%t[%p]@%o e%e %d`, "orders[2]@41 e3 1717243200123"},
		{`%k=%v %K %V`, "k=value 1 5"},
		{`%h (%H)`, "a=1,b= (2)"},
		{`100%% %v\t\\\r\0`, "100% value\t\\\r\x00"},
		{`plain`, "plain"},
		{``, ""},
	} {
		f, err := parseFormat(tc.format)
		if err != nil {
			t.Errorf("parseFormat(%q): %v", tc.format, err)
			continue
		}
		if got := string(f.append(nil, rec)); got != tc.want {
			t.Errorf("format %q: %q, want %q", tc.format, got, tc.want)
		}
	}
	// A record without key or headers.
	f, _ := parseFormat(`[%k][%h][%K][%H]`)
	if got := string(f.append(nil, &kgo.Record{})); got != "[][][0][0]" {
		t.Errorf("empty record: %q", got)
	}
	for _, bad := range []string{`%x`, `%`, `\`, `\q`, `ok %s`} {
		if _, err := parseFormat(bad); err == nil {
			t.Errorf("parseFormat(%q): no error", bad)
		}
	}
}

func TestParseFrom(t *testing.T) {
	ms := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	for _, tc := range []struct {
		in   string
		want startSpec
	}{
		{"beginning", startSpec{kind: startBeginning}},
		{"start", startSpec{kind: startBeginning}},
		{"end", startSpec{kind: startEnd}},
		{"0", startSpec{kind: startOffset}},
		{"42", startSpec{kind: startOffset, offset: 42}},
		{"-3", startSpec{kind: startRelative, offset: 3}},
		{"@1717243200000", startSpec{kind: startTime, ms: ms}},
		{"2024-06-01T12:00:00Z", startSpec{kind: startTime, ms: ms}},
		{"@2024-06-01T14:00:00+02:00", startSpec{kind: startTime, ms: ms}},
		{"2024-06-01T12:00:00.5Z", startSpec{kind: startTime, ms: ms + 500}},
	} {
		got, err := parseFrom(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseFrom(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "yesterday", "@", "@-5", "2024-06-01", "@1969-01-01T00:00:00Z", "1.5"} {
		if got, err := parseFrom(bad); err == nil {
			t.Errorf("parseFrom(%q) = %+v, want an error", bad, got)
		}
	}
}
