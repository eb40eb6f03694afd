// Package logging builds Skein's zerolog loggers: structured and levelled,
// a human-readable console format on a terminal and one JSON object per line
// otherwise (files, pipes, log collectors); and Limiter, the node-wide rate
// limit on lines about failures, which counts what it holds back.
//
// The package sets no zerolog globals: everything it decides (level, format,
// timestamp precision) lives in the logger it returns, so tests and several
// nodes in one process can each have their own.
package logging

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// The values of log.format.
const (
	// FormatAuto picks FormatConsole when the output is a terminal and
	// FormatJSON otherwise.
	FormatAuto = "auto"
	// FormatConsole is zerolog's ConsoleWriter: one aligned, human-readable
	// line per event, coloured on a terminal.
	FormatConsole = "console"
	// FormatJSON is one JSON object per line.
	FormatJSON = "json"
)

// Formats lists the accepted values of log.format.
var Formats = []string{FormatAuto, FormatConsole, FormatJSON}

// Levels lists the accepted values of log.level, most verbose first.
var Levels = []string{"trace", "debug", "info", "warn", "error"}

// TimeFormat is the layout of the time field: RFC 3339 in UTC with
// milliseconds, because a broker's events are often less than a second apart.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// New returns a logger writing to w at the given level ("trace", "debug",
// "info", "warn" or "error") in the given format ("auto", "console" or
// "json"). isTerminal tells whether w is a terminal (see IsTerminal): it
// decides what "auto" means and whether console output is coloured.
//
// Every event carries a "time" field (TimeFormat), "level" and "message".
func New(w io.Writer, level, format string, isTerminal bool) (zerolog.Logger, error) {
	lvl, err := ParseLevel(level)
	if err != nil {
		return zerolog.Nop(), err
	}
	switch format {
	case FormatAuto:
		if isTerminal {
			w = consoleWriter(w, true)
		}
	case FormatConsole:
		w = consoleWriter(w, isTerminal)
	case FormatJSON:
	default:
		return zerolog.Nop(), fmt.Errorf("logging: unknown format %q: want %s", format, strings.Join(Formats, ", "))
	}
	return zerolog.New(w).Level(lvl).Hook(timeHook{}), nil
}

// ParseLevel parses a level name of Levels.
func ParseLevel(s string) (zerolog.Level, error) {
	switch s {
	case "trace":
		return zerolog.TraceLevel, nil
	case "debug":
		return zerolog.DebugLevel, nil
	case "info":
		return zerolog.InfoLevel, nil
	case "warn":
		return zerolog.WarnLevel, nil
	case "error":
		return zerolog.ErrorLevel, nil
	}
	return zerolog.NoLevel, fmt.Errorf("logging: unknown level %q: want %s", s, strings.Join(Levels, ", "))
}

// ValidFormat reports whether s is one of Formats.
func ValidFormat(s string) bool {
	for _, f := range Formats {
		if s == f {
			return true
		}
	}
	return false
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

func consoleWriter(w io.Writer, colour bool) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{Out: w, NoColor: !colour, TimeFormat: "15:04:05.000"}
}

// timeHook stamps each event with the wall-clock time in TimeFormat.
//
// NB: zerolog's own Timestamp() formats with the global
// zerolog.TimeFieldFormat (whole seconds by default); a hook keeps the
// precision a property of this logger instead of a process-wide global.
type timeHook struct{}

func (timeHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(TimeFormat))
}
