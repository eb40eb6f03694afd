// Package needroot lets a test that needs root (mounting a tmpfs, making
// network namespaces, reading another process's timer slack) say so: run
// by root, as CI runs every test, it does nothing; run by anyone else, it
// skips the test with what it needs, and records the test for `make
// test`'s summary, so that a contributor without root sees the whole
// suite pass except the tests named there.
package needroot

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// DirEnv names the directory where skipped tests are recorded, one file a
// test, named after it, saying what it needs; `make test` sets it and
// prints what is there after its run. A test run by root removes its file.
// NB: the directory is not cleared before a run: a package whose result
// comes from go test's cache runs none of its tests, and its skips must
// still be named.
const DirEnv = "SKEIN_NOT_RUN_DIR"

// Require skips t unless the process runs as root; what says what the test
// does that needs it.
func Require(t testing.TB, what string) {
	t.Helper()
	record := ""
	if dir := os.Getenv(DirEnv); dir != "" {
		record = filepath.Join(dir, unsafe.ReplaceAllString(t.Name(), "_"))
	}
	if os.Geteuid() == 0 {
		if record != "" {
			os.Remove(record)
		}
		return
	}
	reason := "needs root for " + what + " (CI runs it as root)"
	if record != "" && os.MkdirAll(filepath.Dir(record), 0o755) == nil {
		os.WriteFile(record, []byte(t.Name()+": "+reason+"\n"), 0o644)
	}
	t.Skip(reason)
}

// unsafe matches what may not stand in a file name.
var unsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)
