package actors

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// A peer that stays down costs one line when its link fails and one when
// it works again, however many attempts fail in between.
func TestLinkFailuresLoggedOnce(t *testing.T) {
	var buf bytes.Buffer
	lk := &links{down: map[string]int{}}
	log := slog.New(linkLog{next: SlogHandler(zerolog.New(&buf).Level(zerolog.WarnLevel)), links: lk})
	down := errors.New("connection refused")
	log.Error("EndpointWriter lost connection", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down))
	for i := range 10 {
		log.Error("EndpointWriter failed to connect", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down), slog.Int("retry", i))
		log.Error("EndpointWriter failed to create receive stream", slog.String("address", "10.0.0.2:9093"), slog.Any("error", down))
	}
	log.Error("EndpointWriter failed to connect", slog.String("address", "10.0.0.3:9093"), slog.Any("error", down))
	lk.up("10.0.0.2:9093", log)
	lk.up("10.0.0.4:9093", log) // never down: not worth a line
	log.Error("EndpointWriter failed to serialize message", slog.String("address", "10.0.0.2:9093"))

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`"address":"10.0.0.2:9093","error":"connection refused","message":"remoting: a peer is unreachable`,
		`"address":"10.0.0.3:9093","error":"connection refused","message":"remoting: a peer is unreachable`,
		`"address":"10.0.0.2:9093","failures":21,"message":"remoting: a peer is reachable again"`,
		`"message":"EndpointWriter failed to serialize message"`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %s\nwant it to contain %s", i, lines[i], w)
		}
	}
}
