//go:build !race

package controller

// bigPartitions is how many partitions TestBigSnapshotsInChunks creates.
const bigPartitions = 100_000
