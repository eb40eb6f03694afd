package image

import (
	"errors"
	"reflect"
	"testing"
)

// TestExtensionRecords: SetExtension creates and replaces an instance,
// DeleteExtension removes one, a delete of a missing one is a conflict,
// and every image before a change keeps what it had.
func TestExtensionRecords(t *testing.T) {
	for _, typ := range []RecordType{TypeSetExtension, TypeDeleteExtension} {
		if r := New(typ); r == nil || r.Type() != typ {
			t.Errorf("New(%d) = %#v", typ, r)
		}
	}
	apply := func(im *Image, r Record) *Image {
		t.Helper()
		next, err := im.Apply(im.Offset+1, r)
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	settings := map[string]string{"source.topics": "orders"}
	empty := Empty()
	one := apply(empty, &SetExtension{Extension: Extension{Name: "mirror", Kind: "copy", Settings: settings}})
	settings["source.topics"] = "changed" // the record's map is not the image's
	want := &Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders"}}
	if got := one.Extensions["mirror"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("after SetExtension: %+v, want %+v", got, want)
	}
	if len(empty.Extensions) != 0 {
		t.Fatalf("the empty image changed: %v", empty.Extensions)
	}

	replaced := apply(one, &SetExtension{Extension: Extension{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "payments"}}})
	if got := replaced.Extensions["mirror"].Settings["source.topics"]; got != "payments" {
		t.Errorf("after a replace: source.topics = %s", got)
	}
	if got := one.Extensions["mirror"].Settings["source.topics"]; got != "orders" {
		t.Errorf("the replaced image changed: source.topics = %s", got)
	}
	two := apply(replaced, &SetExtension{Extension: Extension{Name: "audit", Kind: "count"}})
	if got := two.ExtensionNames(); !reflect.DeepEqual(got, []string{"audit", "mirror"}) {
		t.Errorf("ExtensionNames() = %v", got)
	}

	deleted := apply(two, &DeleteExtension{Name: "mirror"})
	if _, ok := deleted.Extensions["mirror"]; ok || len(two.Extensions) != 2 {
		t.Errorf("after DeleteExtension: %v; before it: %v", deleted.Extensions, two.Extensions)
	}
	if _, err := deleted.Apply(9, &DeleteExtension{Name: "mirror"}); !errors.Is(err, ErrConflict) {
		t.Errorf("deleting a missing extension: %v, want ErrConflict", err)
	}
	if _, err := deleted.Apply(9, &SetExtension{}); !errors.Is(err, ErrConflict) {
		t.Errorf("an extension without a name: %v, want ErrConflict", err)
	}

	a := &Extension{Name: "x", Kind: "k"}
	if !a.Equal(&Extension{Name: "x", Kind: "k", Settings: map[string]string{}}) {
		t.Error("nil and empty settings differ")
	}
	if a.Equal(&Extension{Name: "x", Kind: "k", Settings: map[string]string{"a": ""}}) || a.Equal(&Extension{Name: "x", Kind: "j"}) {
		t.Error("different definitions are equal")
	}
}
