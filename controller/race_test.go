//go:build race

package controller

// bigPartitions is how many partitions TestBigSnapshotsInChunks creates:
// fewer under the race detector, which makes creating them ten times
// slower, but still a snapshot of several chunks.
const bigPartitions = 25_000
