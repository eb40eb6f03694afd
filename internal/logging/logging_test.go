package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestNewFormats(t *testing.T) {
	for _, tc := range []struct {
		format     string
		isTerminal bool
		wantJSON   bool
	}{
		{"auto", false, true},
		{"auto", true, false},
		{"json", true, true},
		{"json", false, true},
		{"console", false, false},
		{"console", true, false},
	} {
		t.Run(tc.format+map[bool]string{true: "/tty", false: "/pipe"}[tc.isTerminal], func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(&buf, "info", tc.format, tc.isTerminal)
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Str("key", "value").Msg("hello")
			line := buf.String()
			var m map[string]any
			isJSON := json.Unmarshal([]byte(line), &m) == nil
			if isJSON != tc.wantJSON {
				t.Fatalf("JSON = %v, want %v: %q", isJSON, tc.wantJSON, line)
			}
			if !isJSON {
				if !strings.Contains(line, "hello") || !strings.Contains(line, "key=") {
					t.Fatalf("console line lacks message or field: %q", line)
				}
				coloured := strings.Contains(line, "\x1b[")
				if coloured != tc.isTerminal {
					t.Fatalf("coloured = %v on terminal = %v: %q", coloured, tc.isTerminal, line)
				}
				return
			}
			if m["message"] != "hello" || m["level"] != "info" || m["key"] != "value" {
				t.Fatalf("unexpected fields: %v", m)
			}
			ts, _ := m["time"].(string)
			if _, err := time.Parse(TimeFormat, ts); err != nil || !strings.Contains(ts, ".") {
				t.Fatalf("time %q is not in TimeFormat with milliseconds: %v", ts, err)
			}
		})
	}
}

func TestNewLevel(t *testing.T) {
	var buf bytes.Buffer
	log, err := New(&buf, "warn", "json", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Msg("dropped")
	log.Warn().Msg("kept")
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.Contains(got, "kept") {
		t.Fatalf("level warn wrote %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct{ level, format, want string }{
		{"verbose", "json", `logging: unknown level "verbose": want trace, debug, info, warn, error`},
		{"", "json", `logging: unknown level ""`},
		{"INFO", "json", `unknown level "INFO"`},
		{"info", "xml", `logging: unknown format "xml": want auto, console, json`},
	} {
		_, err := New(&bytes.Buffer{}, tc.level, tc.format, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q, %q) = %v, want an error containing %q", tc.level, tc.format, err, tc.want)
		}
	}
}
