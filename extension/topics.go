package extension

import (
	"fmt"
	"regexp"
	"strings"
)

// TopicMatcher decides which topics an instance reads (source.topics).
type TopicMatcher struct {
	exact    map[string]bool
	patterns []*regexp.Regexp
}

// NewTopicMatcher compiles a source.topics value: comma-separated names or
// regular expressions, each matched against whole topic names.
func NewTopicMatcher(spec string) (*TopicMatcher, error) {
	m := &TopicMatcher{exact: map[string]bool{}}
	for _, s := range strings.Split(spec, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		m.exact[s] = true
		re, err := regexp.Compile("^(?:" + s + ")$")
		if err != nil {
			return nil, fmt.Errorf("source.topics: %q is neither a topic name nor a regular expression: %v", s, err)
		}
		m.patterns = append(m.patterns, re)
	}
	if len(m.exact) == 0 {
		return nil, fmt.Errorf("source.topics names no topic")
	}
	return m, nil
}

// Match reports whether the instance reads topic. Internal topics (whose
// names start with "__") match only when named exactly.
func (m *TopicMatcher) Match(topic string) bool {
	if m.exact[topic] {
		return true
	}
	if strings.HasPrefix(topic, "__") {
		return false
	}
	for _, re := range m.patterns {
		if re.MatchString(topic) {
			return true
		}
	}
	return false
}
