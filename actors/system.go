package actors

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/rs/zerolog"
)

// Dead-letter logging is throttled to DeadLetterThrottleCount lines per
// DeadLetterThrottleInterval (protoactor then logs one line counting the
// dropped ones). Dead letters are logged at info, so they reach the log only
// when the node's level is debug or trace.
const (
	DeadLetterThrottleCount    = 10
	DeadLetterThrottleInterval = time.Second
)

// NewSystem returns a protoactor actor system whose own log goes to logger
// instead of protoactor's default (coloured text on stderr).
//
// protoactor's log is bridged at warn, so that restarts ("[ACTOR]
// Recovering", at info) and endpoint chatter stay out of the node's log:
// supervision is reported from the EventStream by our own actors instead. If
// logger is at debug or trace, the bridge follows it, for debugging
// protoactor itself. Lines carry component=protoactor and the system id.
//
// Metrics stay off (protoactor's OpenTelemetry metrics cost two clock reads
// and an allocation per message; Skein exports its own). opts are applied
// after Skein's options and may override them.
//
// NB: ActorSystem.Shutdown stops no actor: stop the root actors with
// StopFuture or PoisonFuture first.
func NewSystem(logger zerolog.Logger, opts ...actor.ConfigOption) *actor.ActorSystem {
	bridged := logger.With().Str("component", "protoactor").Logger()
	if lvl := logger.GetLevel(); lvl > zerolog.DebugLevel && lvl < zerolog.WarnLevel {
		bridged = bridged.Level(zerolog.WarnLevel)
	}
	lk := &links{down: map[string]int{}}
	all := append([]actor.ConfigOption{
		actor.WithLoggerFactory(func(s *actor.ActorSystem) *slog.Logger {
			return slog.New(linkLog{next: SlogHandler(bridged), links: lk}).With("actor_system", s.ID)
		}),
		actor.WithDeadLetterThrottleCount(DeadLetterThrottleCount),
		actor.WithDeadLetterThrottleInterval(DeadLetterThrottleInterval),
	}, opts...)
	sys := actor.NewActorSystem(all...)
	sys.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*remote.EndpointConnectedEvent); ok {
			lk.up(e.Address, sys.Logger())
		}
	})
	return sys
}

// SlogHandler returns a slog.Handler that writes to logger, for libraries
// that log through log/slog (protoactor, its remote package).
//
// It is zerolog's own SlogHandler with three fixes for protoactor's records:
//
//   - attributes named like zerolog's own fields ("message", "level",
//     "time"; protoactor logs the dead letter's payload as "message") are
//     renamed "actor_message" and so on, so the JSON has no duplicate keys;
//   - the record's time is dropped, so that logger's own timestamp (see
//     internal/logging) is the only "time" field;
//   - PIDs are written as "address/id" strings instead of protobuf structs.
func SlogHandler(logger zerolog.Logger) slog.Handler {
	return bridge{next: zerolog.NewSlogHandler(logger)}
}

type bridge struct {
	next    slog.Handler
	grouped bool // inside WithGroup: keys are prefixed, so nothing clashes
}

func (b bridge) Enabled(ctx context.Context, level slog.Level) bool {
	return b.next.Enabled(ctx, level)
}

func (b bridge) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(time.Time{}, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(b.fix(a))
		return true
	})
	return b.next.Handle(ctx, out)
}

func (b bridge) WithAttrs(attrs []slog.Attr) slog.Handler {
	fixed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		fixed[i] = b.fix(a)
	}
	return bridge{next: b.next.WithAttrs(fixed), grouped: b.grouped}
}

func (b bridge) WithGroup(name string) slog.Handler {
	if name == "" {
		return b
	}
	return bridge{next: b.next.WithGroup(name), grouped: true}
}

func (b bridge) fix(a slog.Attr) slog.Attr {
	if !b.grouped {
		switch a.Key {
		case zerolog.MessageFieldName, zerolog.LevelFieldName, zerolog.TimestampFieldName:
			a.Key = "actor_" + a.Key
		}
	}
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	if pid, ok := a.Value.Any().(*actor.PID); ok {
		if pid == nil {
			return slog.String(a.Key, "")
		}
		return slog.String(a.Key, pid.Address+"/"+pid.Id)
	}
	return a
}
