// Package store is the partition log on disk. (Package doc in progress: the
// byte layouts of segments, indexes and checkpoints are drawn here.)
package store
