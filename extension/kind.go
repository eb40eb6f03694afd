package extension

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Kind is one kind of extension, registered under its name (Register) and
// built into the binary. Instances of a kind are created at runtime, each
// with its own name and settings; an instance runs one Extension per
// source partition it reads.
type Kind struct {
	// Name is what instances name as their kind: lower case, no spaces.
	Name string
	// Doc is a one-line description, for `skein extension kinds`.
	Doc string
	// Settings are the settings the kind takes, besides the common ones
	// (CommonSettings); any other setting is refused when an instance is
	// created.
	Settings []Setting
	// State says that the kind keeps state (Output.Put, Instance.State).
	State bool
	// Skip, if set, reports whether an instance with these (resolved)
	// settings must not read topic although source.topics matches it: its
	// own output, say.
	Skip func(settings map[string]string, topic string) bool
	// New returns the Extension that processes one source partition of an
	// instance. It is called on the partition's extension actor, at every
	// (re)start of it.
	New func(Instance) (Extension, error)
}

// Setting is one setting a kind takes.
type Setting struct {
	Name string
	// Default is the value when the instance does not set it; Required
	// settings have none.
	Default  string
	Required bool
	Doc      string
}

// The settings every kind takes.
const (
	// SettingSourceTopics names the topics an instance reads: a
	// comma-separated list of names or regular expressions, each matched
	// against whole topic names. Internal topics (__*) match only by
	// their exact name.
	SettingSourceTopics = "source.topics"
	// SettingStart is where an instance starts reading a partition it has
	// no committed position for: earliest (the default) or latest.
	SettingStart = "source.start"
	// SettingSourceBootstrap, when set, names another Kafka-compatible
	// cluster (comma-separated host:port) whose topics the instance reads
	// instead of this cluster's.
	SettingSourceBootstrap = "source.bootstrap.servers"
	// SettingOutputTransactions, "true", writes the output, the state
	// and the position in Kafka transactions (txn.go): exactly once
	// whatever the kind does, visible to read_committed readers at each
	// commit. "false" (the default) writes as an idempotent producer and
	// drops, after a restart, what the targets already have: exactly
	// once for a kind whose output follows from its input and state.
	SettingOutputTransactions = "output.transactions"
)

// CommonSettings are the settings every kind takes.
var CommonSettings = []Setting{
	{Name: SettingSourceTopics, Required: true, Doc: "the topics to read: names or regular expressions, comma-separated"},
	{Name: SettingStart, Default: "earliest", Doc: "where to start a partition with no committed position: earliest or latest"},
	{Name: SettingOutputTransactions, Default: "false", Doc: "true: write the output, state and position in transactions, exactly once whatever the kind does; false: as an idempotent producer, exactly once for a kind whose output follows from its input and state"},
	{Name: SettingSourceBootstrap, Doc: "another Kafka-compatible cluster (host:port, comma-separated) to read source.topics from; empty: this cluster"},
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]*Kind{}
)

// Register makes a kind available to instances, under k.Name. It panics on
// a duplicate or malformed kind: registration happens in init functions,
// where a mistake is the programmer's.
func Register(k Kind) {
	if k.Name == "" || strings.ContainsAny(k.Name, " \t/") || k.New == nil {
		panic(fmt.Sprintf("extension: malformed kind %q", k.Name))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, ok := kinds[k.Name]; ok {
		panic(fmt.Sprintf("extension: kind %q registered twice", k.Name))
	}
	kinds[k.Name] = &k
}

// Lookup returns the kind registered under name.
func Lookup(name string) (*Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Kinds returns the registered kinds, by name.
func Kinds() []*Kind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return slices.SortedFunc(maps.Values(kinds), func(a, b *Kind) int { return strings.Compare(a.Name, b.Name) })
}

// Resolve checks an instance's settings against the kind's and returns
// them with the defaults filled in: a setting the kind does not take, a
// required one missing, or a source.topics that does not compile is an
// error that names it.
func (k *Kind) Resolve(settings map[string]string) (map[string]string, error) {
	all := append(slices.Clone(CommonSettings), k.Settings...)
	known := map[string]Setting{}
	for _, s := range all {
		known[s.Name] = s
	}
	var unknown []string
	for name := range settings {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("kind %s takes no setting %s", k.Name, strings.Join(unknown, ", "))
	}
	out := map[string]string{}
	for _, s := range all {
		v, ok := settings[s.Name]
		switch {
		case ok:
			out[s.Name] = v
		case s.Required:
			return nil, fmt.Errorf("kind %s needs the setting %s (%s)", k.Name, s.Name, s.Doc)
		default:
			out[s.Name] = s.Default
		}
	}
	if _, err := NewTopicMatcher(out[SettingSourceTopics]); err != nil {
		return nil, err
	}
	if s := out[SettingOutputTransactions]; s != "true" && s != "false" {
		return nil, fmt.Errorf("%s is %q; it takes true or false", SettingOutputTransactions, s)
	}
	if s := out[SettingStart]; s != "earliest" && s != "latest" {
		return nil, fmt.Errorf("%s is %q; it takes earliest or latest", SettingStart, s)
	}
	return out, nil
}
