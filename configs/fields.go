package configs

import (
	"errors"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// field is one key of Node or Topic, found through its mapstructure tag, so
// that the struct is the one list of keys: loading, printing, describing and
// the flags all walk these.
type field struct {
	key   string
	index []int // reflect field index path from the root struct
	typ   reflect.Type
}

var (
	nodeFields  = fieldsOf(reflect.TypeFor[Node](), nil)
	topicFields = fieldsOf(reflect.TypeFor[Topic](), nil)
	nodeByKey   = byKey(nodeFields)
	topicByKey  = byKey(topicFields)
)

func fieldsOf(t reflect.Type, prefix []int) []field {
	var fs []field
	for i := range t.NumField() {
		sf := t.Field(i)
		index := append(append([]int(nil), prefix...), i)
		switch tag := sf.Tag.Get("mapstructure"); tag {
		case "-", "", keyExtensions: // not a scalar: readExtensions reads it
		case ",squash":
			fs = append(fs, fieldsOf(sf.Type, index)...)
		default:
			fs = append(fs, field{key: tag, index: index, typ: sf.Type})
		}
	}
	return fs
}

func byKey(fs []field) map[string]field {
	m := make(map[string]field, len(fs))
	for _, f := range fs {
		m[f.key] = f
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var cleanupPolicyType = reflect.TypeFor[CleanupPolicy]()

// set parses s into the field of the struct that root points to. The error
// is an *Error naming the key and s.
func (f field) set(root reflect.Value, s string) error {
	v := root.Elem().FieldByIndex(f.index)
	if f.typ == cleanupPolicyType {
		p, err := ParseCleanupPolicy(s)
		if err != nil {
			return &Error{Key: f.key, Value: s, Reason: err.Error()}
		}
		v.Set(reflect.ValueOf(p))
		return nil
	}
	if f.typ == throttledReplicasType {
		if err := ValidThrottledReplicas(s); err != nil {
			return &Error{Key: f.key, Value: s, Reason: err.Error()}
		}
	}
	switch f.typ.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return &Error{Key: f.key, Value: s, Reason: "must be true or false"}
		}
		v.SetBool(b)
	case reflect.Int16, reflect.Int32, reflect.Int64:
		bits := f.typ.Bits()
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			reason := "not an integer"
			if errors.Is(err, strconv.ErrRange) {
				reason = "out of range for a " + strconv.Itoa(bits) + "-bit integer"
			}
			return &Error{Key: f.key, Value: s, Reason: reason}
		}
		v.SetInt(i)
	default:
		// A new field type needs a case here; fieldsTest checks them all.
		panic("configs: no parser for " + f.key + " of type " + f.typ.String())
	}
	return nil
}

// format returns the field's value of root (a Node or a Topic) as a string
// that set parses back, as Kafka's DescribeConfigs and our YAML show it.
func (f field) format(root any) string {
	v := reflect.ValueOf(root).FieldByIndex(f.index)
	if f.typ == cleanupPolicyType {
		return v.Interface().(CleanupPolicy).String()
	}
	switch f.typ.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	panic("configs: no formatter for " + f.key + " of type " + f.typ.String())
}
