package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletion: skein completion prints a script for each shell it
// names, bash's one that bash parses, and the scripts' helper (__complete)
// completes -o's formats; an unknown shell is a usage error.
func TestCompletion(t *testing.T) {
	for shell, mark := range map[string]string{
		"bash": "__start_skein",
		"zsh":  "#compdef skein",
		"fish": "complete -c skein",
	} {
		out := ok(t, "", "", "completion", shell)
		if !strings.Contains(out, mark) {
			t.Errorf("skein completion %s: no %q in %d bytes", shell, mark, len(out))
		}
		if shell != "bash" {
			continue
		}
		if _, err := exec.LookPath("bash"); err != nil {
			t.Log("no bash: the bash script is not parsed")
			continue
		}
		script := filepath.Join(t.TempDir(), "skein.bash")
		if err := os.WriteFile(script, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Errorf("bash -n on skein completion bash: %v\n%s", err, msg)
		}
	}
	// NB: __complete reports its directive on stderr.
	if r := skeinCmd(t, "", "", "__complete", "version", "-o", ""); r.code != 0 || !strings.HasPrefix(r.stdout, "text\njson\nyaml\n") {
		t.Errorf("__complete version -o '': %v\nwant text, json and yaml", r)
	}
	fails(t, "", 2, `invalid argument "tcsh" for "skein completion"`, "", "completion", "tcsh")
}
