package cli

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: --version, -v and `skein version` print the version, the Go
// version and the platform; -o json the same facts.
func TestVersion(t *testing.T) {
	want := runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	var texts []string
	for _, args := range [][]string{{"--version"}, {"-v"}, {"version"}} {
		out := ok(t, "", "", args...)
		if !strings.HasPrefix(out, "skein ") || !strings.Contains(out, want) {
			t.Errorf("skein %s printed %q; want skein VERSION and %q", strings.Join(args, " "), out, want)
		}
		texts = append(texts, out)
	}
	if texts[0] != texts[1] || texts[0] != texts[2] {
		t.Errorf("--version, -v and version differ: %q", texts)
	}
	var v buildVersion
	if err := json.Unmarshal([]byte(ok(t, "", "", "version", "-o", "json")), &v); err != nil {
		t.Fatal(err)
	}
	if v.Version == "" || v.Go != runtime.Version() || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Errorf("version -o json: %+v", v)
	}
	if got := strings.Fields(texts[0])[1]; got != v.Version {
		t.Errorf("--version says %s, -o json %s", got, v.Version)
	}
}
