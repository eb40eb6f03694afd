//go:build kafkadiff

package diff

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A tree is an answer made comparable: a struct becomes a tnode whose
// children are its fields, a list becomes a node whose children are its
// elements, keyed by what identifies them (a topic by its name, a
// partition by its index, a config by its name, an API by its key) when
// every element has a distinct key, or by position; everything else is a
// leaf, the value rendered as the difference report shows it.
type tnode struct {
	segs     []string // ".Field" or "[key]", in order
	children map[string]any
}

func (n *tnode) add(seg string, child any) {
	n.segs = append(n.segs, seg)
	n.children[seg] = child
}

// natural are the fields that differ between any two brokers, even two
// Kafkas, each with how it is rendered instead of its value: where they
// listen, their cluster's id, a topic's random id (whether set, so that a
// missing one still shows), and the finalized features' epoch (the offset
// of the metadata record that set them; -1 means none is known), and a
// produce's log append time (the broker's clock; -1 means none).
var natural = map[string]func(reflect.Value) string{
	"Host":                   setOrNot,
	"Port":                   setOrNot,
	"ClusterID":              setOrNot,
	"TopicID":                setOrNot,
	"FinalizedFeaturesEpoch": epoch,
	"LogAppendTime":          epoch,
}

func setOrNot(v reflect.Value) string {
	if v.IsZero() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return "<unset>"
	}
	return "<set>"
}

func epoch(v reflect.Value) string {
	if v.Int() < 0 {
		return fmt.Sprint(v.Int())
	}
	return "<known>"
}

// skipped are fields that are not part of an answer's content: the version
// (both answers carry the one sent) and unknown tagged fields (kmsg keeps
// them aside; a tag kmsg does not know would be a difference kmsg cannot
// name, and neither broker sends one).
var skipped = map[string]bool{
	"Version":     true,
	"UnknownTags": true,
}

// treeOf turns v into a tree, replacing in every string the names the
// case gave to the broker's ids (sub).
func treeOf(v any, sub map[string]string) any {
	return walk(reflect.ValueOf(v), "", sub)
}

func walk(v reflect.Value, field string, sub map[string]string) any {
	if render, ok := natural[field]; ok {
		return render(v)
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "null"
		}
		return walk(v.Elem(), field, sub)
	case reflect.Struct:
		n := &tnode{children: map[string]any{}}
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || skipped[f.Name] {
				continue
			}
			n.add("."+f.Name, walk(v.Field(i), f.Name, sub))
		}
		return n
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return bytesLeaf(v, field, sub)
		}
		return list(v, sub)
	case reflect.String:
		s := v.String()
		if name, ok := sub[s]; ok {
			s = name
		}
		return strconv.Quote(s)
	case reflect.Int16:
		if strings.HasSuffix(field, "ErrorCode") {
			return errorCode(int16(v.Int()))
		}
	}
	return fmt.Sprint(v.Interface())
}

// errorCode renders a Kafka error code with its name.
func errorCode(code int16) string {
	if code == 0 {
		return "0"
	}
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return fmt.Sprintf("%d (%s)", code, ke.Message)
		}
	}
	return strconv.Itoa(int(code))
}

// list keys a list's elements by their key field when they all have a
// distinct one, else by position.
func list(v reflect.Value, sub map[string]string) any {
	n := &tnode{children: map[string]any{}}
	key := keyField(v.Type().Elem())
	if key != "" {
		seen := map[string]bool{}
		for i := range v.Len() {
			k := keyOf(v.Index(i).FieldByName(key), sub)
			if seen[k] {
				key = "" // not a key after all
				break
			}
			seen[k] = true
		}
	}
	n.children = map[string]any{}
	for i := range v.Len() {
		seg := "[" + strconv.Itoa(i) + "]"
		if key != "" {
			seg = "[" + keyOf(v.Index(i).FieldByName(key), sub) + "]"
		}
		n.add(seg, walk(v.Index(i), "", sub))
	}
	return n
}

// keyFields are the fields that identify a list's element, most specific
// first.
var keyFields = []string{"Topic", "Partition", "ApiKey", "Name", "Group", "GroupID", "ResourceName", "MemberID", "Key"}

func keyField(t reflect.Type) string {
	if t.Kind() != reflect.Struct {
		return ""
	}
	// NB: a config's synonyms are in precedence order, which is part of
	// the answer; so are record batches and records.
	if strings.Contains(t.Name(), "Synonym") {
		return ""
	}
	for _, k := range keyFields {
		if f, ok := t.FieldByName(k); ok {
			switch f.Type.Kind() {
			case reflect.String, reflect.Int16, reflect.Int32, reflect.Pointer:
				return k
			}
		}
	}
	return ""
}

func keyOf(v reflect.Value, sub map[string]string) string {
	if v.Kind() == reflect.Int16 {
		// Of the key fields only ApiKey is an int16: name it as kmsg does.
		if name := kmsg.NameForKey(int16(v.Int())); name != "Unknown" {
			return name
		}
	}
	switch v.Kind() {
	case reflect.String:
		if name, ok := sub[v.String()]; ok {
			return name
		}
		return v.String()
	case reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return keyOf(v.Elem(), sub)
	}
	return fmt.Sprint(v.Interface())
}

// bytesLeaf renders bytes: a fetch's records as their batches (a tree of
// their own), anything else as hex, or as length and hash when long.
func bytesLeaf(v reflect.Value, field string, sub map[string]string) any {
	b := v.Bytes()
	if v.Kind() == reflect.Array {
		b = make([]byte, v.Len())
		reflect.Copy(reflect.ValueOf(b), v)
	}
	if field == "RecordBatches" {
		return batches(b, sub)
	}
	if v.Kind() == reflect.Slice && v.IsNil() {
		return "null"
	}
	if len(b) <= 32 {
		return fmt.Sprintf("0x%x", b)
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%d bytes, sha256 %x", len(b), sum[:8])
}

// batches parses a fetch's record batches (magic 2), so that a difference
// names the field that differs.
func batches(b []byte, sub map[string]string) any {
	n := &tnode{children: map[string]any{}}
	for i := 0; len(b) > 0; i++ {
		var rb kmsg.RecordBatch
		if len(b) < 12 {
			n.add(fmt.Sprintf("[%d]", i), fmt.Sprintf("%d trailing bytes", len(b)))
			break
		}
		size := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
		if size > len(b) {
			n.add(fmt.Sprintf("[%d]", i), fmt.Sprintf("partial batch, %d of %d bytes", len(b), size))
			break
		}
		if err := rb.ReadFrom(b[:size]); err != nil {
			n.add(fmt.Sprintf("[%d]", i), fmt.Sprintf("undecodable batch: %v", err))
		} else {
			n.add(fmt.Sprintf("[%d]", i), walk(reflect.ValueOf(rb), "", sub))
		}
		b = b[size:]
	}
	return n
}

// difference is one path where the answers differ.
type difference struct {
	path, kafka, skein string
}

func (d difference) String() string {
	return fmt.Sprintf("%s: kafka %s, skein %s", d.path, d.kafka, d.skein)
}

const absent = "<absent>"

// diff lists the paths where the trees a (Kafka's) and b (Skein's) differ,
// in a's order and then b's extra children.
func diff(path string, a, b any) []difference {
	an, aNode := a.(*tnode)
	bn, bNode := b.(*tnode)
	switch {
	case aNode && bNode:
		var out []difference
		for _, seg := range an.segs {
			bc, ok := bn.children[seg]
			if !ok {
				out = append(out, difference{join(path, seg), summary(an.children[seg]), absent})
				continue
			}
			out = append(out, diff(join(path, seg), an.children[seg], bc)...)
		}
		for _, seg := range bn.segs {
			if _, ok := an.children[seg]; !ok {
				out = append(out, difference{join(path, seg), absent, summary(bn.children[seg])})
			}
		}
		return out
	case !aNode && !bNode:
		if a != b {
			return []difference{{path, a.(string), b.(string)}}
		}
		return nil
	}
	return []difference{{path, summary(a), summary(b)}}
}

func join(path, seg string) string {
	if path == "" {
		return strings.TrimPrefix(seg, ".")
	}
	return path + seg
}

// summary renders a subtree on one line, for a difference where the other
// side has nothing there.
func summary(v any) string {
	n, ok := v.(*tnode)
	if !ok {
		return v.(string)
	}
	var parts []string
	for _, seg := range n.segs {
		parts = append(parts, strings.TrimPrefix(seg, ".")+"="+summary(n.children[seg]))
	}
	s := "{" + strings.Join(parts, " ") + "}"
	if len(s) > 300 {
		s = s[:300] + "…}"
	}
	return s
}
