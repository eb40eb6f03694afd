package configs

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestLoadExtensions: the file's extensions are read with their settings
// (nested maps dotted, lists joined, numbers as written), printed by YAML
// and read back the same.
func TestLoadExtensions(t *testing.T) {
	n := mustLoad(t, `
data.dir: /x
extensions:
  - name: mirror
    kind: copy
    settings:
      source.topics: [orders, payments]
      source:
        start: latest
      max: 5
  - name: audit
    kind: count
`, nil)
	want := []Extension{
		{Name: "mirror", Kind: "copy", Settings: map[string]string{"source.topics": "orders,payments", "source.start": "latest", "max": "5"}},
		{Name: "audit", Kind: "count"},
	}
	if !reflect.DeepEqual(n.Extensions, want) {
		t.Fatalf("extensions %+v, want %+v", n.Extensions, want)
	}
	if got := n.Map()["extensions"]; got != "mirror,audit" {
		t.Errorf(`Map()["extensions"] = %q`, got)
	}
	printed := n.YAML()
	again := mustLoad(t, printed, nil)
	if !reflect.DeepEqual(again.Extensions, want) || again.YAML() != printed {
		t.Fatalf("round trip through\n%s\ngave %+v", printed, again.Extensions)
	}
	if def := Default().YAML(); !strings.Contains(def, "\nextensions: []\n") {
		t.Errorf("the default YAML does not show extensions:\n%s", def)
	}
	if got := mustLoad(t, "extensions: []\n", nil).Extensions; got != nil {
		t.Errorf("an empty list loads as %#v", got)
	}
}

func TestExtensionErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		args []string
		want string
	}{
		{"not a list", "extensions: mirror\n", nil, "configs: extensions = mirror: must be a list"},
		{"not a map", "extensions: [mirror]\n", nil, "configs: extensions[0] = mirror: must be a map"},
		{"unknown key", "extensions:\n  - name: m\n    knd: copy\n", nil, "configs: extensions[0].knd = copy: unknown key"},
		{"map for a name", "extensions:\n  - name: {a: b}\n    kind: copy\n", nil, "configs: extensions[0].name = map[a:b]: must be a value"},
		{"settings not a map", "extensions:\n  - name: m\n    kind: copy\n    settings: x\n", nil, "configs: extensions[0].settings = x: must be a map"},
		{"no name", "extensions:\n  - kind: copy\n", nil, `configs: extensions[0].name = "": must not be empty`},
		{"no kind", "extensions:\n  - name: m\n", nil, `configs: extensions[0].kind = "": must not be empty`},
		{"twice", "extensions:\n  - {name: m, kind: copy}\n  - {name: m, kind: count}\n", nil, "configs: extensions[1].name = m: names an earlier extension too"},
		{"set", "", []string{"--set", "extensions=m"}, "configs: extensions = m: a list, which only the --config file sets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.file, nil, tc.args...)
			var e *Error
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &e) {
				t.Fatalf("Load: %v\nwant an *Error containing %q", err, tc.want)
			}
		})
	}
}
