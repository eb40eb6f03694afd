package actors

import (
	"context"
	"log/slog"
	"sync"
)

// protoactor's remote logs every failed attempt to reach a peer, two
// lines every two seconds for as long as the peer is down. linkLog turns
// that into one warning when a peer's link fails, and links.up into one
// when it works again, with the number of failures in between: a failure
// is logged when it starts and when it ends, never once per retry.
type linkLog struct {
	next  slog.Handler
	links *links
}

type links struct {
	mu   sync.Mutex
	down map[string]int // address → failures since the link went down
}

// up ends a failure of the link to addr, if there was one: protoactor
// publishes EndpointConnectedEvent on the actor system's event stream
// when a link works.
func (k *links) up(addr string, log *slog.Logger) {
	k.mu.Lock()
	n, wasDown := k.down[addr]
	delete(k.down, addr)
	k.mu.Unlock()
	if wasDown {
		log.Warn("remoting: a peer is reachable again", slog.String("address", addr), slog.Int("failures", n))
	}
}

// linkFailures are the remote's messages that say a peer is unreachable.
var linkFailures = map[string]bool{
	"EndpointWriter failed to connect":                  true,
	"EndpointWriter failed to create receive stream":    true,
	"EndpointWriter lost connection":                    true,
	"EndpointWriter failed to send connect request":     true,
	"EndpointWriter failed to receive connect response": true,
}

func (l linkLog) Enabled(ctx context.Context, level slog.Level) bool {
	return l.next.Enabled(ctx, level)
}

func (l linkLog) Handle(ctx context.Context, r slog.Record) error {
	if !linkFailures[r.Message] {
		return l.next.Handle(ctx, r)
	}
	var addr string
	var cause slog.Value
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "address":
			addr = a.Value.String()
		case "error":
			cause = a.Value
		}
		return true
	})
	l.links.mu.Lock()
	n, wasDown := l.links.down[addr]
	l.links.down[addr] = n + 1
	l.links.mu.Unlock()
	if wasDown {
		return nil
	}
	out := slog.NewRecord(r.Time, slog.LevelWarn, "remoting: a peer is unreachable; retrying, and logging again once it is back", r.PC)
	out.AddAttrs(slog.String("address", addr), slog.Any("error", cause.Any()))
	return l.next.Handle(ctx, out)
}

func (l linkLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return linkLog{next: l.next.WithAttrs(attrs), links: l.links}
}

func (l linkLog) WithGroup(name string) slog.Handler {
	return linkLog{next: l.next.WithGroup(name), links: l.links}
}
