package node

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/skeinlog/skein/internal/logging"
	"github.com/skeinlog/skein/internal/vfs"
	"github.com/skeinlog/skein/partition"
)

// openFilesCap returns the cap of the node's descriptor cache:
// log.max.open.files, or, when that is 0, the open-file limit less a
// reserve of a quarter of it (at least 256) for client and cluster sockets,
// the admin listener, checkpoints and directory syncs. A limit too small
// for that reserve leaves half of it to the cache.
//
// NB: Go raises the soft RLIMIT_NOFILE to the hard one at start, so the
// limit read here is the hard one unless something lowered it since.
func openFilesCap(configured int32) (limit int, reason string) {
	if configured > 0 {
		return int(configured), "log.max.open.files"
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur > 1<<30 {
		return 1 << 20, "no open-file limit"
	}
	n := int(rl.Cur)
	reserve := max(256, n/4)
	if n-reserve < n/2 {
		return max(n/2, 1), fmt.Sprintf("half of the open-file limit %d", n)
	}
	return n - reserve, fmt.Sprintf("the open-file limit %d less a reserve of %d", n, reserve)
}

// fileIdleTimeout is how long a descriptor may go unused before the node
// closes it, whatever room the cap leaves: a node at rest holds few.
const fileIdleTimeout = time.Minute

// closeIdleFiles closes unused descriptors every tenth of fileIdleTimeout
// until the node stops.
func (n *Node) closeIdleFiles() {
	t := time.NewTicker(fileIdleTimeout / 10)
	defer t.Stop()
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
			n.files.CloseIdle(fileIdleTimeout)
		}
	}
}

// newSyncer starts the node's group commit over the filesystems of its log
// dirs: syncfs(2) on a descriptor of each, held for the node's life so
// that a writeback error anywhere on the filesystem since the node started
// is reported (Linux 5.8 and later) and fails the partitions that waited.
// Log dirs on one filesystem share its descriptor: one syncfs makes them
// all durable.
//
// A round syncs only the filesystems of its logs, and a log hears its own
// filesystem's outcome: a disk whose sync fails fails its own partitions.
//
// A node with chaos.enable syncs through disk, which can fail the sync and
// notes what it made durable (diskFault.PowerLoss); disk is nil otherwise.
func newSyncer(logDirs []string, disk *diskFault) (*partition.Syncer, error) {
	var dirs []*os.File
	closeAll := func() {
		for _, d := range dirs {
			d.Close()
		}
	}
	var syncs []func() error
	fsOf := map[string]int{} // log dir -> index in syncs
	byFSID := map[[2]int32]int{}
	for _, path := range logDirs {
		_, _, fsid, err := partition.Statfs(path)
		if i, seen := byFSID[fsid]; seen && err == nil {
			fsOf[path] = i
			continue
		}
		dir, err := os.Open(path)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("node: opening data.dir %s for syncs: %w", path, err)
		}
		dirs = append(dirs, dir)
		raw, err := dir.SyscallConn()
		if err != nil {
			closeAll()
			return nil, err
		}
		syncFS := func() error {
			var serr error
			if err := raw.Control(func(fd uintptr) { serr = syncfs(int(fd)) }); err != nil {
				return err
			}
			return serr
		}
		if disk != nil {
			// NB: PowerLoss takes a sync of one filesystem for a sync of
			// every file written: exact with one filesystem, as the
			// chaos tests run.
			plain := syncFS
			syncFS = func() error {
				if err := disk.failAt(vfs.OpSync, ""); err != nil {
					return err
				}
				return disk.syncedAll(plain)
			}
		}
		fsOf[path] = len(syncs)
		byFSID[fsid] = len(syncs)
		syncs = append(syncs, syncFS)
	}
	return partition.NewSyncerByFS(syncs, func(dir string) int {
		if i, ok := fsOf[filepath.Dir(dir)]; ok {
			return i
		}
		return -1
	}, closeAll), nil
}

// fileCollector exports the descriptor cache's counters, the syncs of
// the filesystem, and the partitions in the failed state, by cause.
type fileCollector struct {
	files    *vfs.Cache
	syncer   *partition.Syncer
	reg      *partition.Registry
	failures *logging.Limiter
	logDirs  *partition.LogDirs
}

var (
	openFilesDesc = prometheus.NewDesc("skein_open_files",
		"Segment, index and checkpoint files the node holds open now.", nil, nil)
	openFilesMaxDesc = prometheus.NewDesc("skein_open_files_max",
		"The cap on open files (log.max.open.files, or derived from the open-file limit).", nil, nil)
	fileHitsDesc = prometheus.NewDesc("skein_file_cache_hits_total",
		"File operations that found their descriptor open.", nil, nil)
	fileMissesDesc = prometheus.NewDesc("skein_file_cache_misses_total",
		"File opens: new files, and files reopened after the cache closed them.", nil, nil)
	fileEvictionsDesc = prometheus.NewDesc("skein_file_cache_evictions_total",
		"Descriptors the cache closed to stay under its cap.", nil, nil)
	syncRoundsDesc = prometheus.NewDesc("skein_sync_rounds_total",
		"Rounds of syncs of the log dirs' filesystems (syncfs) that made appends durable: the group commit's rounds.", nil, nil)
	syncLogsDesc = prometheus.NewDesc("skein_sync_logs_total",
		"Partition logs the rounds made durable, each once a round: logs per round is this over skein_sync_rounds_total.", nil, nil)
	suppressedDesc = prometheus.NewDesc("skein_log_lines_suppressed_total",
		"Lines about storage failures and recoveries the node-wide rate limit held back.", nil, nil)
	failedDesc = prometheus.NewDesc("skein_partitions_failed",
		"Hosted partitions in the failed state (storage errors: answering KAFKA_STORAGE_ERROR and retrying), by cause.", []string{"cause"}, nil)
	logDirOfflineDesc = prometheus.NewDesc("skein_log_dir_offline",
		"1 while a log dir is offline (one of its partitions failed for an I/O error or a full disk), else 0; by log dir.", []string{"dir"}, nil)
)

func (c fileCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{openFilesDesc, openFilesMaxDesc, fileHitsDesc, fileMissesDesc, fileEvictionsDesc, syncRoundsDesc, syncLogsDesc, suppressedDesc, failedDesc, logDirOfflineDesc} {
		ch <- d
	}
}

func (c fileCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.files.Stats()
	ch <- prometheus.MustNewConstMetric(openFilesDesc, prometheus.GaugeValue, float64(st.Open))
	ch <- prometheus.MustNewConstMetric(openFilesMaxDesc, prometheus.GaugeValue, float64(st.Max))
	ch <- prometheus.MustNewConstMetric(fileHitsDesc, prometheus.CounterValue, float64(st.Hits))
	ch <- prometheus.MustNewConstMetric(fileMissesDesc, prometheus.CounterValue, float64(st.Misses))
	ch <- prometheus.MustNewConstMetric(fileEvictionsDesc, prometheus.CounterValue, float64(st.Evictions))
	for _, dir := range c.logDirs.Dirs() {
		offline := 0.0
		if c.logDirs.Offline(dir) {
			offline = 1
		}
		ch <- prometheus.MustNewConstMetric(logDirOfflineDesc, prometheus.GaugeValue, offline, dir)
	}
	sy := c.syncer.Stats()
	ch <- prometheus.MustNewConstMetric(syncRoundsDesc, prometheus.CounterValue, float64(sy.Rounds))
	ch <- prometheus.MustNewConstMetric(syncLogsDesc, prometheus.CounterValue, float64(sy.Logs))
	ch <- prometheus.MustNewConstMetric(suppressedDesc, prometheus.CounterValue, float64(c.failures.Suppressed()))
	failed := map[string]int{}
	for _, h := range c.reg.All() {
		if v := h.View(); v != nil && v.Failure != nil {
			failed[v.Failure.Cause]++
		}
	}
	for _, cause := range partition.Causes {
		ch <- prometheus.MustNewConstMetric(failedDesc, prometheus.GaugeValue, float64(failed[cause]), cause)
	}
}

// failedPartitions says which hosted partitions cannot serve writes and
// why, for /readyz: a count by cause and the first few by name. It is ""
// when none.
func failedPartitions(reg *partition.Registry) string {
	var names []string
	byCause := map[string]int{}
	var example = map[string]string{}
	for _, h := range reg.All() {
		v := h.View()
		if v == nil || v.Failure == nil {
			continue
		}
		name := fmt.Sprintf("%s-%d", h.Topic, h.Partition)
		names = append(names, name)
		byCause[v.Failure.Cause]++
		if e, ok := example[v.Failure.Cause]; !ok || name < e {
			example[v.Failure.Cause] = name
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%d partitions cannot serve (storage failed, retrying):", len(names))
	for _, cause := range partition.Causes {
		if n := byCause[cause]; n > 0 {
			fmt.Fprintf(&b, " %s %d (e.g. %s);", cause, n, example[cause])
		}
	}
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	fmt.Fprintf(&b, " %s", strings.Join(names, ", "))
	return b.String()
}
