package logging

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestLimiter(t *testing.T) {
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	lim := NewLimiter(2, time.Second)
	now := time.Unix(1000, 0)
	lim.now = func() time.Time { return now }
	for i := range 5 {
		lim.Event(log.Error()).Int("i", i).Msg("failed")
	}
	now = now.Add(time.Second)
	lim.Event(log.Error()).Int("i", 5).Msg("failed")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`{"level":"error","i":0,"message":"failed"}`,
		`{"level":"error","i":1,"message":"failed"}`,
		`{"level":"error","suppressed":3,"i":5,"message":"failed"}`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("logged\n%s\nwant\n%s", buf.String(), strings.Join(want, "\n"))
	}
	if lim.Suppressed() != 3 {
		t.Fatalf("Suppressed() = %d", lim.Suppressed())
	}
	// A disabled level costs nothing and counts nothing.
	quiet := log.Level(zerolog.ErrorLevel)
	if lim.Event(quiet.Debug()) != nil || lim.Suppressed() != 3 {
		t.Fatal("a disabled event went through the limiter")
	}
}
