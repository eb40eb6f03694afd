package store

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/skeinlog/skein/internal/vfs"
)

// TestLogThroughATinyDescriptorCache runs logs over a descriptor cache that
// may hold four files of all three logs' dozens, two of them pinned: every read, write, roll,
// retention pass, compaction, truncation, clean reopen and crash recovery
// goes through descriptors closed and reopened under it, and everything
// durable reads back byte for byte.
func TestLogThroughATinyDescriptorCache(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			mem := vfs.NewCrashableMem()
			cache := vfs.NewCache(mem, 4)
			o := testOptions()
			o.SegmentBytes = int64(1500 + r.IntN(4000))
			o.RetentionBytes = -1
			logs := make([]*testLog, 3)
			ws := make([]written, len(logs))
			for i := range logs {
				logs[i] = openTestLogIn(t, cache, fmt.Sprintf("/data/topic-%d", i), o)
				ws[i] = written{}
			}
			for round := range 5 {
				for range 200 {
					i := r.IntN(len(logs))
					tl := logs[i]
					b := logBatch(1+r.IntN(4), r.IntN(300), tl.clock.Now().UnixMilli())
					res, err := tl.Append(b, int32(round))
					if err != nil {
						t.Fatal(err)
					}
					ws[i][res.BaseOffset] = b
				}
				for i, tl := range logs {
					if err := tl.Sync(); err != nil {
						t.Fatal(err)
					}
					tl.SetHighWatermark(tl.LogEndOffset())
					switch r.IntN(4) {
					case 0:
						tl.reopen()
					case 1:
						// Retention by size, through the deferred deletion of
						// segment files an older view may still read.
						o2 := tl.Options()
						o2.RetentionBytes, o2.FileDeleteDelayMs = 4000, 0
						if err := tl.SetOptions(o2); err != nil {
							t.Fatal(err)
						}
						if _, err := tl.ApplyRetention(); err != nil {
							t.Fatal(err)
						}
						tl.clock.Advance(time.Second)
						for off := range ws[i] {
							if off < tl.LogStartOffset() {
								delete(ws[i], off)
							}
						}
					case 2:
						cut := tl.LogStartOffset() + r.Int64N(tl.LogEndOffset()-tl.LogStartOffset()+1)
						if err := tl.Truncate(cut); err != nil {
							t.Fatal(err)
						}
						for off := range ws[i] {
							if off >= tl.LogEndOffset() {
								delete(ws[i], off)
							}
						}
					case 3:
						before := cache.Stats().Pinned
						if tl.ReleaseFiles() != (cache.Stats().Pinned == before-1) {
							t.Fatalf("log %d: ReleaseFiles and the cache's pins disagree", i)
						}
					}
					checkRecovered(t, tl.Log, ws[i], tl.LogEndOffset())
				}
				if st := cache.Stats(); st.Open > st.Max || st.Pinned > st.Max/2 {
					t.Fatalf("round %d: cache %+v", round, st)
				}
			}
			// A crash: the clone has what was synced, which is everything.
			crashed := vfs.NewCache(mem.CrashClone(vfs.CrashOptions{}), 2)
			for i, tl := range logs {
				tl.cfg.FS = crashed
				tl.Close()
				l, err := Open(tl.cfg)
				if err != nil {
					t.Fatal(err)
				}
				tl.Log = l
				checkRecovered(t, l, ws[i], l.LogEndOffset())
			}
			if st := cache.Stats(); st.Evictions == 0 || st.Misses == 0 {
				t.Fatalf("the cache was not exercised: %+v", st)
			}
		})
	}
}
