package partition

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skeinlog/skein/internal/vfs"
)

// freeOf stubs LogDirs.Free: each log dir on a filesystem of its own
// (fsid from its name) with the bytes free given.
func freeOf(free map[string]int64) func(string) (int64, [2]int32, error) {
	return func(dir string) (int64, [2]int32, error) {
		f, ok := free[filepath.Base(dir)]
		if !ok {
			return 0, [2]int32{}, os.ErrNotExist
		}
		return f, [2]int32{int32(len(dir)), int32(dir[len(dir)-1])}, nil
	}
}

func logDirsIn(t *testing.T, names ...string) (*LogDirs, []string) {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for _, n := range names {
		d := filepath.Join(root, n)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	d, err := OpenLogDirs(vfs.Default, dirs)
	if err != nil {
		t.Fatal(err)
	}
	return d, dirs
}

// TestLogDirsPlaceByFreeSpace: a new partition goes to the log dir with
// the most free space (the rule; Kafka 4 counts partitions), and
// stays there whatever the free space does later.
func TestLogDirsPlaceByFreeSpace(t *testing.T) {
	d, dirs := logDirsIn(t, "a", "b")
	free := map[string]int64{"a": 100 << 30, "b": 10 << 30}
	d.Free = freeOf(free)
	for p := range int32(4) {
		if got := d.Place(Key{Topic: "t", Partition: p}); got != Dir(dirs[0], "t", p) {
			t.Fatalf("t-%d in %s, want it in a, the log dir with more free space", p, got)
		}
	}
	free["a"], free["b"] = 1<<30, 50<<30
	if got := d.Place(Key{Topic: "t", Partition: 0}); got != Dir(dirs[0], "t", 0) {
		t.Errorf("t-0 moved to %s: a placed partition stays where it is", got)
	}
	if got := d.Place(Key{Topic: "u", Partition: 0}); got != Dir(dirs[1], "u", 0) {
		t.Errorf("u-0 in %s, want it in b, now the one with more free space", got)
	}
}

// TestLogDirsTieByCount: log dirs on one filesystem share its free space,
// so the partition count spreads partitions over them evenly; a log dir
// whose free space cannot be read is chosen last.
func TestLogDirsTieByCount(t *testing.T) {
	d, dirs := logDirsIn(t, "a", "b", "c")
	d.Free = func(dir string) (int64, [2]int32, error) {
		if filepath.Base(dir) == "c" {
			return 0, [2]int32{}, os.ErrPermission
		}
		// One filesystem whose free space shrinks between calls: the
		// first figure counts for both.
		return int64(len(dir)) << 20 * int64(dir[len(dir)-1]), [2]int32{7, 7}, nil
	}
	count := map[string]int{}
	for p := range int32(10) {
		count[filepath.Dir(d.Place(Key{Topic: "t", Partition: p}))]++
	}
	if count[dirs[0]] != 5 || count[dirs[1]] != 5 || count[dirs[2]] != 0 {
		t.Errorf("placed %v, want 5 in a, 5 in b, none in c", count)
	}
}

// TestLogDirsFindsPartitions: at start each partition is found in the log
// dir that holds it; one in two log dirs is an error naming both.
func TestLogDirsFindsPartitions(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, dir := range []string{Dir(a, "t", 0), Dir(b, "t", 1), Dir(b, "u", 0), filepath.Join(a, "meta-0"), filepath.Join(b, "t-2.abcd"+DeletedDirSuffix)} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d, err := OpenLogDirs(vfs.Default, []string{a, b}, "meta-0")
	if err != nil {
		t.Fatal(err)
	}
	d.Free = freeOf(map[string]int64{"a": 1, "b": 1 << 40})
	for k, want := range map[Key]string{{"t", 0}: a, {"t", 1}: b, {"u", 0}: b} {
		if got, ok := d.Of(k); !ok || got != want {
			t.Errorf("%s-%d found in %q, want %s", k.Topic, k.Partition, got, want)
		}
		if got := d.Place(k); got != Dir(want, k.Topic, k.Partition) {
			t.Errorf("%s-%d placed in %s, want where it was", k.Topic, k.Partition, got)
		}
	}
	for _, k := range []Key{{"meta", 0}, {"t", 2}} {
		if dir, ok := d.Of(k); ok {
			t.Errorf("%s-%d taken for a partition in %s", k.Topic, k.Partition, dir)
		}
	}
	if got := len(d.Placed(b)); got != 2 {
		t.Errorf("%d partitions in b, want 2", got)
	}
	d.Forget(Key{"t", 0})
	if got := d.Place(Key{"t", 0}); got != Dir(b, "t", 0) {
		t.Errorf("t-0 after Forget in %s, want it placed anew, in b", got)
	}

	if err := os.MkdirAll(Dir(b, "t", 0), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = OpenLogDirs(vfs.Default, []string{a, b})
	if err == nil || !strings.Contains(err.Error(), Dir(a, "t", 0)) || !strings.Contains(err.Error(), Dir(b, "t", 0)) {
		t.Errorf("t-0 in both log dirs: error %v, want one naming both", err)
	}
}

func TestParseDirName(t *testing.T) {
	for name, want := range map[string]string{
		"t-0": "t/0", "my-topic-12": "my-topic/12", "t-01": "", "t-": "", "-1": "", "t-x": "",
		"t-3.00ff" + DeletedDirSuffix: "",
	} {
		topic, p, ok := ParseDirName(name)
		got := ""
		if ok {
			got = fmt.Sprintf("%s/%d", topic, p)
		}
		if got != want {
			t.Errorf("ParseDirName(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestLogDirsOffline: a log dir is offline while one of its partitions is
// failed for a cause of the disk; descriptors running out is the node's,
// not the log dir's; a partition stopping or deleted no longer counts.
func TestLogDirsOffline(t *testing.T) {
	d, dirs := logDirsIn(t, "a", "b")
	d.Free = freeOf(map[string]int64{"a": 2, "b": 1})
	k1, k2, k3 := Key{"t", 0}, Key{"t", 1}, Key{"u", 0}
	for _, k := range []Key{k1, k2, k3} {
		d.Place(k) // all in a
	}
	var nilDirs *LogDirs
	nilDirs.Failing(k1, CauseIO, os.ErrInvalid) // a node without log dirs: no panic
	nilDirs.Working(k1, false)

	d.Failing(k3, CauseDescriptors, os.ErrInvalid)
	if d.Offline(dirs[0]) {
		t.Error("offline for want of descriptors")
	}
	d.Failing(k1, CauseIO, os.ErrInvalid)
	d.Failing(k2, CauseDiskFull, os.ErrInvalid)
	if !d.Offline(dirs[0]) || d.Offline(dirs[1]) {
		t.Errorf("offline: a %v, b %v; want a only", d.Offline(dirs[0]), d.Offline(dirs[1]))
	}
	d.Working(k1, false)
	if !d.Offline(dirs[0]) {
		t.Error("online with t-1 still failed")
	}
	d.Forget(k2)
	if d.Offline(dirs[0]) {
		t.Error("offline after its last failed partition was deleted")
	}
	d.Failing(k1, CauseIO, os.ErrInvalid)
	d.Working(k1, true)
	if d.Offline(dirs[0]) {
		t.Error("offline after its failed partition stopped")
	}
}
