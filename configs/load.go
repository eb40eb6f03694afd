package configs

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// The flags of `skein node` that RegisterFlags defines, beside one per key
// in nodeFlags.
const (
	// FlagConfig names the settings file to read (YAML or properties).
	FlagConfig = "config"
	// FlagSet sets any key: --set key=value, repeatable.
	FlagSet = "set"
)

// nodeFlags maps the named flags to their keys; any other key is set with
// --set key=value.
var nodeFlags = []struct{ flag, key, usage string }{
	{"node-id", "node.id", "this node's id"},
	{"data-dir", "data.dir", "this node's log dirs, comma-separated (Kafka's log.dirs); the first holds its metadata"},
	{"listen", "listen", "host:port of the Kafka listener"},
	{"advertise", "advertise", "host:port given to clients; empty means the listen address"},
	{"admin-listen", "admin.listen", "host:port of the admin HTTP API"},
	{"log-level", "log.level", "log level: trace, debug, info, warn, error"},
	{"log-format", "log.format", "log format: auto (console on a terminal, JSON otherwise), console, json"},
	{"durability", "durability", "when a write counts as done: fsync (on disk on each replica) or replicated (Kafka's: in memory on each in-sync replica)"},
	{"roles", "process.roles", "this node's roles: broker, controller, or both (comma-separated)"},
	{"controller-quorum", "controller.quorum.voters", "the controller quorum, id@host:port,...; empty runs a cluster of one"},
	{"cluster-listen", "cluster.listen", "host:port of the remoting between nodes (with --controller-quorum)"},
}

// defaultsFrom are the keys whose default is another key's value.
var defaultsFrom = map[string]string{"advertise": "listen", "cluster.advertise": "cluster.listen"}

// EnvPrefix starts the environment variable of every key: the key in upper
// case, dots and dashes turned into underscores, after this prefix
// (SKEIN_DATA_DIR for data.dir, SKEIN_LOG_SEGMENT_BYTES for
// log.segment.bytes).
const EnvPrefix = "SKEIN_"

// EnvName returns the environment variable that sets key.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))
}

// alias is a broker config Kafka accepts in another unit than the
// TopicDefaults field it sets, e.g. log.retention.hours for
// log.retention.ms.
type alias struct {
	of     string // the key it sets
	factor int64  // milliseconds per unit
	min    int64  // Kafka's lower bound for the alias itself
	// negativeUnlimited: a negative value means -1 (log.retention.*, as
	// KafkaConfig.logRetentionTimeMillis does).
	negativeUnlimited bool
}

// aliases are Kafka's alternative broker names, each below the key it sets
// in Kafka's precedence: when one source sets several of a group, the first
// in topicKeys' broker list wins.
var aliases = map[string]alias{
	"log.retention.minutes": {of: "log.retention.ms", factor: 60 * 1000, min: math.MinInt32, negativeUnlimited: true},
	"log.retention.hours":   {of: "log.retention.ms", factor: 60 * 60 * 1000, min: math.MinInt32, negativeUnlimited: true},
	"log.roll.hours":        {of: "log.roll.ms", factor: 60 * 60 * 1000, min: 1},
}

// group returns the keys that set the same field as key, in precedence
// order, or nil when key has no aliases.
func group(key string) []string {
	if a, ok := aliases[key]; ok {
		key = a.of
	}
	for _, k := range topicKeys {
		if len(k.broker) > 1 && k.broker[0] == key {
			return k.broker
		}
	}
	return nil
}

// dataDirNames are Kafka's names for data.dir, log.dirs over log.dir as
// in Kafka.
var dataDirNames = []string{"log.dirs", "log.dir"}

func known(key string) bool {
	_, isField := nodeByKey[key]
	_, isAlias := aliases[key]
	_, _, isListener := listenerKey(key)
	return isField || isAlias || isListener || slices.Contains(dataDirNames, key)
}

// unknownKey is the reason an unknown key is refused, with the known key
// it was most likely meant to be: "unknown key; did you mean
// log.segment.bytes? (in --set)".
func unknownKey(key, in string) string {
	if s := suggestKey(key); s != "" {
		return "unknown key; did you mean " + s + "? (in " + in + ")"
	}
	return "unknown key (in " + in + ")"
}

// suggestKey returns the known key closest to key by edit distance, if it
// is close enough to be a typo (a quarter of the key's length, at least
// 2), or one that key is the end or the start of (segment.bytes for
// log.segment.bytes); "" if none.
func suggestKey(key string) string {
	best, bestDist := "", max(2, len(key)/4)+1
	for _, k := range allKeys() {
		d := editDistance(key, k)
		if strings.HasSuffix(k, "."+key) || strings.HasPrefix(k, key+".") {
			d = min(d, 1)
		}
		if d < bestDist || d == bestDist && k < best {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes
// (keys are ASCII).
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// RegisterFlags defines the flags of `skein node` on fs: --config FILE, one
// flag per common key (nodeFlags: --node-id, --data-dir, --listen,
// --advertise, --admin-listen, --log-level, --log-format, --durability,
// --roles, --controller-quorum, --cluster-listen) and a repeatable --set
// key=value for any key. Load reads them back after fs is parsed.
//
// The flags take strings whatever the key's type, so that a bad value is
// reported by Load like any other, naming the key.
func RegisterFlags(fs *pflag.FlagSet) {
	def := Default()
	fs.String(FlagConfig, "", "file of settings: YAML (keys as in --print-config), or Kafka's server.properties (.properties)")
	for _, nf := range nodeFlags {
		f := nodeByKey[nf.key]
		value := f.format(def)
		if _, ok := defaultsFrom[nf.key]; ok {
			value = ""
		}
		fs.Var(&flagValue{value: value, typ: flagType(f.typ)}, nf.flag, nf.usage+" ("+nf.key+")")
	}
	fs.StringArray(FlagSet, nil, "set any key, e.g. --set log.retention.ms=3600000 (repeatable)")
}

// flagValue is a string-valued pflag.Value that shows the key's type in
// the help.
type flagValue struct{ value, typ string }

func (v *flagValue) String() string     { return v.value }
func (v *flagValue) Set(s string) error { v.value = s; return nil }
func (v *flagValue) Type() string       { return v.typ }

func flagType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int16, reflect.Int32, reflect.Int64:
		return "int"
	case reflect.Bool:
		return "bool"
	}
	return "string"
}

// Load returns the node configuration from, lowest precedence first:
// Default, the YAML file named by --config, the SKEIN_* variables of
// environ (as os.Environ returns it), and the flags of fs, which must have
// been defined by RegisterFlags and parsed; fs may be nil. The result is
// validated, and its Explicit lists what the sources set.
//
// Keys are the Kafka names of Node's fields, plus Kafka's alternative
// names log.retention.minutes, log.retention.hours and log.roll.hours. The
// file may write keys flat (log.retention.ms: 1000) or nested (log:
// {retention: {ms: 1000}}); log.cleanup.policy may be a YAML list. A key the
// file does not know is an error, as is one given to --set. Environment
// variables that name no key are ignored, because the environment is shared
// with other programs (and test harnesses) using the SKEIN_ prefix.
//
// When a source sets a key of a group (log.retention.ms, .minutes, .hours),
// it overrides the whole group of lower sources; within one source Kafka's
// precedence holds (ms over minutes over hours).
func Load(fs *pflag.FlagSet, environ []string) (Node, error) {
	var file, flags map[string]string
	var extensions []Extension
	if fs != nil {
		if path, _ := fs.GetString(FlagConfig); path != "" {
			var err error
			if file, extensions, err = readFile(path); err != nil {
				return Node{}, err
			}
		}
		var err error
		if flags, err = fromFlags(fs); err != nil {
			return Node{}, err
		}
	}
	env := fromEnv(environ)

	// viper merges the sources over the defaults, lowest first. NB: keys contain dots, so viper's key delimiter must be
	// something else, or it would read log.retention.ms as nested maps.
	v := viper.NewWithOptions(viper.KeyDelimiter("\x00"))
	def := Default()
	for _, f := range nodeFields {
		v.SetDefault(f.key, f.format(def))
	}
	for key := range defaultsFrom {
		v.SetDefault(key, "") // empty means: the other key's value
	}
	explicit := map[string]string{}
	var perListener map[string]map[string]string
	for _, layer := range []map[string]string{file, env, flags} {
		for key, val := range layer {
			if listener, of, ok := listenerKey(key); ok {
				if perListener == nil {
					perListener = map[string]map[string]string{}
				}
				if perListener[listener] == nil {
					perListener[listener] = map[string]string{}
				}
				perListener[listener][of] = val
			}
		}
		resolved, err := resolveAliases(layer)
		if err != nil {
			return Node{}, err
		}
		recordExplicit(explicit, layer)
		m := make(map[string]any, len(resolved))
		for key, val := range resolved {
			m[key] = val
		}
		if err := v.MergeConfigMap(m); err != nil {
			return Node{}, fmt.Errorf("configs: %w", err)
		}
	}

	var n Node
	dst := reflect.ValueOf(&n)
	var val validator
	for _, f := range nodeFields {
		if err := f.set(dst, fmt.Sprint(v.Get(f.key))); err != nil {
			val.errs = append(val.errs, err)
		}
	}
	if err := val.err(); err != nil {
		return Node{}, err
	}
	if n.Advertise == "" {
		n.Advertise = n.Listen
	}
	n.ListenerSettings = perListener
	if n.Listeners != "" {
		if ls := n.KafkaListeners(); len(ls) > 0 {
			n.Listen, n.Advertise = ls[0].Listen, ls[0].Advertise
		}
	}
	if listen, advertise, ok := n.ClusterListener(); ok {
		if set, ok := explicit["cluster.listen"]; ok && set != listen {
			return Node{}, &Error{Key: "cluster.listen", Value: set, Reason: "controller.listener.names names a listener at " + listen + ": set one of the two"}
		}
		n.ClusterListen = listen
		if _, ok := explicit["cluster.advertise"]; !ok {
			n.ClusterAdvertise = advertise
		}
	}
	if host, _, _ := net.SplitHostPort(n.ClusterListen); unspecified(host) && explicit["cluster.advertise"] == "" {
		// A voter listening on every address (Kafka's CONTROLLER://:9093)
		// is reached at its address in controller.quorum.voters, as
		// Kafka's controllers are.
		voters, _ := n.Voters()
		for _, v := range voters {
			if v.ID == n.NodeID {
				n.ClusterAdvertise = v.Addr
			}
		}
	}
	if n.ClusterAdvertise == "" {
		n.ClusterAdvertise = n.ClusterListen
	}
	n.Explicit = explicit
	n.Extensions = extensions
	if err := n.Validate(); err != nil {
		return Node{}, err
	}
	return n, nil
}

// recordExplicit adds a source's keys to explicit, first dropping what lower
// sources set in the same alias groups: a source overrides a whole group.
func recordExplicit(explicit, layer map[string]string) {
	for key := range layer {
		for _, k := range group(key) {
			delete(explicit, k)
		}
	}
	for key, val := range layer {
		explicit[key] = val
	}
}

// resolveAliases returns layer with its alias keys converted into the keys
// they set, unless the layer sets a key of higher precedence.
func resolveAliases(layer map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(layer))
	for key, val := range layer {
		_, _, perListener := listenerKey(key)
		if _, ok := aliases[key]; !ok && !perListener && !slices.Contains(dataDirNames, key) {
			out[key] = val
		}
	}
	if _, ok := layer["data.dir"]; !ok {
		if key := firstSet(layer, dataDirNames); key != "" {
			out["data.dir"] = strings.Join(splitList(layer[key]), ",")
		}
	}
	// Visit aliases in a fixed order; for each group, the first key present
	// in precedence order wins.
	for _, key := range sortedKeys(aliases) {
		raw, ok := layer[key]
		if !ok {
			continue
		}
		a := aliases[key]
		i, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
		if err != nil {
			return nil, &Error{Key: key, Value: raw, Reason: "not a 32-bit integer"}
		}
		if i < a.min {
			return nil, &Error{Key: key, Value: raw, Reason: "must be at least " + fmtInt(a.min)}
		}
		if winner := firstSet(layer, group(key)); winner != key {
			continue
		}
		ms := i * a.factor
		if i < 0 && a.negativeUnlimited {
			ms = -1
		}
		out[a.of] = fmtInt(ms)
	}
	return out, nil
}

func firstSet(layer map[string]string, keys []string) string {
	for _, k := range keys {
		if _, ok := layer[k]; ok {
			return k
		}
	}
	return ""
}

// readFile reads a YAML file into flat keys, and its extensions. A .json
// or .toml file is read as such, a .properties file as Java properties
// (Kafka's server.properties), any other name as YAML.
func readFile(path string) (map[string]string, []Extension, error) {
	if isProperties(path) {
		m, err := readProperties(path)
		return m, nil, err
	}
	v := viper.NewWithOptions(viper.KeyDelimiter("\x00"))
	v.SetConfigFile(path)
	if ext := strings.TrimPrefix(filepath.Ext(path), "."); !slices.Contains(viper.SupportedExts, ext) {
		v.SetConfigType("yaml") // node.conf, or no extension at all
	}
	if err := v.ReadInConfig(); err != nil {
		return nil, nil, fmt.Errorf("configs: reading %s: %w", path, err)
	}
	settings := v.AllSettings()
	extensions, err := readExtensions(settings[keyExtensions], path)
	if err != nil {
		return nil, nil, err
	}
	delete(settings, keyExtensions)
	out := map[string]string{}
	if err := flatten(out, "", settings, path); err != nil {
		return nil, nil, err
	}
	return out, extensions, nil
}

// readExtensions reads the file's extensions: a list of maps with the keys
// name, kind and settings. Settings may nest (source: {topics: orders} is
// source.topics) and a list value is joined with commas, as the file's
// own keys.
func readExtensions(raw any, path string) ([]Extension, error) {
	if raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, &Error{Key: keyExtensions, Value: fmt.Sprint(raw), Reason: "must be a list of {name, kind, settings} (in " + path + ")"}
	}
	var out []Extension
	for i, item := range list {
		key := fmt.Sprintf("%s[%d]", keyExtensions, i)
		m, ok := item.(map[string]any)
		if !ok {
			return nil, &Error{Key: key, Value: fmt.Sprint(item), Reason: "must be a map of name, kind and settings (in " + path + ")"}
		}
		var e Extension
		for _, k := range sortedKeys(m) {
			switch val := m[k]; k {
			case "name", "kind":
				s, err := scalar(key+"."+k, val, path)
				if err != nil {
					return nil, err
				}
				if k == "name" {
					e.Name = s
				} else {
					e.Kind = s
				}
			case "settings":
				if val == nil {
					continue
				}
				sm, ok := val.(map[string]any)
				if !ok {
					return nil, &Error{Key: key + ".settings", Value: fmt.Sprint(val), Reason: "must be a map of setting names to values (in " + path + ")"}
				}
				e.Settings = map[string]string{}
				if err := flattenSettings(e.Settings, key+".settings", "", sm, path); err != nil {
					return nil, err
				}
			default:
				return nil, &Error{Key: key + "." + k, Value: fmt.Sprint(val), Reason: "unknown key: an extension has name, kind and settings (in " + path + ")"}
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// flattenSettings adds an extension's settings m to out, nested maps as
// dotted names.
func flattenSettings(out map[string]string, key, prefix string, m map[string]any, path string) error {
	for _, k := range sortedKeys(m) {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := m[k].(map[string]any); ok {
			if err := flattenSettings(out, key, name, sub, path); err != nil {
				return err
			}
			continue
		}
		s, err := scalar(key+"."+name, m[k], path)
		if err != nil {
			return err
		}
		out[name] = s
	}
	return nil
}

// scalar formats a value of an extension as a string: a list joined with
// commas, nothing as "".
func scalar(key string, val any, path string) (string, error) {
	switch val := val.(type) {
	case nil:
		return "", nil
	case map[string]any:
		return "", &Error{Key: key, Value: fmt.Sprint(val), Reason: "must be a value, not a map (in " + path + ")"}
	case []any:
		parts := make([]string, len(val))
		for i, p := range val {
			parts[i] = fmt.Sprint(p)
		}
		return strings.Join(parts, ","), nil
	}
	return fmt.Sprint(val), nil
}

func flatten(out map[string]string, prefix string, m map[string]any, path string) error {
	for _, k := range sortedKeys(m) {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch val := m[k].(type) {
		case map[string]any:
			if err := flatten(out, key, val, path); err != nil {
				return err
			}
			continue
		case []any:
			if key != "log.cleanup.policy" && known(key) {
				return &Error{Key: key, Value: fmt.Sprint(val), Reason: "a list is allowed only for log.cleanup.policy (in " + path + ")"}
			}
			parts := make([]string, len(val))
			for i, p := range val {
				parts[i] = fmt.Sprint(p)
			}
			out[key] = strings.Join(parts, ",")
		case nil:
			out[key] = ""
		default:
			out[key] = fmt.Sprint(val)
		}
		if !known(key) {
			return &Error{Key: key, Value: out[key], Reason: unknownKey(key, path)}
		}
	}
	return nil
}

// fromEnv returns the keys set by SKEIN_* variables of environ; the last
// of repeated variables wins, as with os/exec.
func fromEnv(environ []string) map[string]string {
	env := map[string]string{}
	for _, kv := range environ {
		if name, val, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(name, EnvPrefix) {
			env[name] = val
		}
	}
	out := map[string]string{}
	for _, key := range allKeys() {
		if val, ok := env[EnvName(key)]; ok {
			out[key] = val
		}
	}
	return out
}

func allKeys() []string {
	keys := make([]string, 0, len(nodeFields)+len(aliases))
	for _, f := range nodeFields {
		keys = append(keys, f.key)
	}
	keys = append(keys, sortedKeys(aliases)...)
	return keys
}

// fromFlags returns the keys set by the named flags that were given and by
// --set. A key given both ways is an error; of repeated --set, the last
// wins.
func fromFlags(fs *pflag.FlagSet) (map[string]string, error) {
	out := map[string]string{}
	byFlag := map[string]string{}
	for _, nf := range nodeFlags {
		if f := fs.Lookup(nf.flag); f != nil && f.Changed {
			out[nf.key] = f.Value.String()
			byFlag[nf.key] = "--" + nf.flag
		}
	}
	sets, err := fs.GetStringArray(FlagSet)
	if err != nil {
		return out, nil // RegisterFlags was not used: named flags only
	}
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		key = strings.TrimSpace(key)
		if !ok {
			return nil, fmt.Errorf("configs: --set %s: want key=value", s)
		}
		if key == keyExtensions {
			return nil, &Error{Key: key, Value: val, Reason: "a list, which only the --config file sets"}
		}
		if !known(key) {
			return nil, &Error{Key: key, Value: val, Reason: unknownKey(key, "--set")}
		}
		if flag, ok := byFlag[key]; ok {
			return nil, fmt.Errorf("configs: %s is given both by %s and by --set", key, flag)
		}
		out[key] = val
	}
	return out, nil
}

// Keys returns every key Load accepts, sorted: Node's keys and Kafka's
// alternative names of some of them.
func Keys() []string {
	keys := allKeys()
	sort.Strings(keys)
	return keys
}
