package library

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "route",
		Doc:  "content-based routing and filtering: each record goes to the topic of the first rule its key or a header matches",
		Settings: []extension.Setting{
			{Name: "routes", Doc: "rules separated by ';', each WHERE~REGEX=>TOPIC, WHERE being key or header:NAME; the first rule that matches wins"},
			{Name: "default.topic", Doc: "where a record that matches no rule goes; empty drops it"},
			partitioning,
		},
		New: newRoute,
	})
}

// route sends each record to the topic of the first rule it matches.
type route struct {
	rules    []rule
	fallback string
	// partition is -1 (by key) or the source partition's number.
	partition int32
}

// rule is one WHERE~REGEX=>TOPIC.
type rule struct {
	header string // "" for the key
	re     *regexp.Regexp
	topic  string
}

func newRoute(in extension.Instance) (extension.Extension, error) {
	rules, err := parseRoutes(in.Settings["routes"])
	if err != nil {
		return nil, err
	}
	p, err := partitionOf(in)
	if err != nil {
		return nil, err
	}
	r := &route{rules: rules, fallback: strings.TrimSpace(in.Settings["default.topic"]), partition: p}
	if len(r.rules) == 0 && r.fallback == "" {
		return nil, fmt.Errorf("routes and default.topic are both empty: every record would be dropped")
	}
	return r, nil
}

// parseRoutes parses the routes setting.
func parseRoutes(s string) ([]rule, error) {
	var out []rule
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		match, topic, ok := strings.Cut(part, "=>")
		where, expr, ok2 := strings.Cut(match, "~")
		topic, where = strings.TrimSpace(topic), strings.TrimSpace(where)
		if !ok || !ok2 || topic == "" {
			return nil, fmt.Errorf("route %q: want WHERE~REGEX=>TOPIC", part)
		}
		r := rule{topic: topic}
		switch {
		case where == "key":
		case strings.HasPrefix(where, "header:") && len(where) > len("header:"):
			r.header = strings.TrimPrefix(where, "header:")
		default:
			return nil, fmt.Errorf("route %q: %q is neither key nor header:NAME", part, where)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("route %q: %v", part, err)
		}
		r.re = re
		out = append(out, r)
	}
	return out, nil
}

func (r *route) Process(records []extension.Record, out extension.Output) error {
	for _, rec := range records {
		if topic := r.topicOf(&rec); topic != "" {
			out.Emit(topic, r.partition, rec)
		}
	}
	return nil
}

// topicOf returns the topic rec goes to, "" to drop it.
func (r *route) topicOf(rec *extension.Record) string {
	for _, ru := range r.rules {
		if ru.header == "" {
			if rec.Key != nil && ru.re.Match(rec.Key) {
				return ru.topic
			}
			continue
		}
		for _, h := range rec.Headers {
			if h.Key == ru.header && ru.re.Match(h.Value) {
				return ru.topic
			}
		}
	}
	return r.fallback
}
