package transport

// DescribeLogDirs: v1-4
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the cluster; otherwise v3+ answer
//     CLUSTER_AUTHORIZATION_FAILED and older versions nothing, as Kafka.
//   - Every log dir of data.dir (made absolute), in its order, each with
//     the partitions it holds (partition.LogDirs) among those this node
//     hosts and the request names (all of them when Topics is null), each
//     with the size of its segment files from its published view
//     (store.View.Size), read without a message to its actor. A partition
//     still loading has no view yet and is left out, as is one the node
//     does not host, as Kafka does.
//   - OffsetLag is Kafka's for a current replica, max(HW - LEO, 0) from the
//     view, and IsFuture false: Skein has no future replicas
//     (AlterReplicaLogDirs is not served).
//   - A log dir offline (partition.LogDirs.Offline: one of its partitions
//     failed for an I/O error or a full disk) is answered
//     KAFKA_STORAGE_ERROR with no partitions and no sizes, as Kafka
//     answers an offline log dir.
//   - v4: TotalBytes and UsableBytes of the filesystem holding each log
//     dir, from statfs; -1 each when statfs fails, and the dir's error is
//     then KAFKA_STORAGE_ERROR.
//
// Version notes: v1 throttling; v2 flexible; v3 top-level error code; v4
// total and usable bytes (KIP-827).

import (
	"cmp"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/partition"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(35, handler{min: 1, max: 4, handle: a.handleDescribeLogDirs})
	})
}

func (a *API) handleDescribeLogDirs(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	if z := c.authz(); !z.may(describe, clusterResource, clusterName) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	var dirs []string
	if a.LogDirs != nil {
		dirs = a.LogDirs.Dirs()
	} else {
		for _, d := range a.Node.LogDirs() {
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			dirs = append(dirs, d)
		}
	}
	resp.Dirs = make([]kmsg.DescribeLogDirsResponseDir, len(dirs))
	index := make(map[string]int, len(dirs))
	for i, d := range dirs {
		resp.Dirs[i] = kmsg.NewDescribeLogDirsResponseDir()
		resp.Dirs[i].Dir = d
		index[d] = i
	}

	var wanted map[partition.Key]bool // nil: every partition
	if req.Topics != nil {
		wanted = map[partition.Key]bool{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				wanted[partition.Key{Topic: t.Topic, Partition: p}] = true
			}
		}
	}
	handles := a.Partitions.All()
	slices.SortFunc(handles, func(x, y *partition.Handle) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	for _, h := range handles {
		k := partition.Key{Topic: h.Topic, Partition: h.Partition}
		if wanted != nil && !wanted[k] {
			continue
		}
		v := h.View()
		if v == nil || v.Log == nil {
			continue
		}
		i := 0
		if a.LogDirs != nil {
			d, ok := a.LogDirs.Of(k)
			if !ok {
				continue // deleted since it was listed
			}
			i = index[d]
		}
		dir := &resp.Dirs[i]
		if a.LogDirs != nil && a.LogDirs.Offline(dir.Dir) {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != h.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = h.Topic
			dir.Topics = append(dir.Topics, t)
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = h.Partition, v.Log.Size()
		// Kafka's lag of a current (not future) replica: how far its log
		// end is below the high watermark, never negative.
		p.OffsetLag = max(v.Log.HighWatermark-v.Log.LogEndOffset, 0)
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	for i := range resp.Dirs {
		if dir := &resp.Dirs[i]; a.LogDirs != nil && a.LogDirs.Offline(dir.Dir) {
			dir.ErrorCode = kerr.KafkaStorageError.Code
			a.metrics.errorCode(35, req.Version, dir.ErrorCode)
		}
	}
	if req.Version >= 4 {
		for i := range resp.Dirs {
			dir := &resp.Dirs[i]
			if dir.ErrorCode != 0 {
				continue
			}
			total, usable, _, err := partition.Statfs(dir.Dir)
			if err != nil {
				a.Logger.Warn().Err(err).Str("dir", dir.Dir).Msg("statfs of a log dir for DescribeLogDirs")
				dir.ErrorCode = kerr.KafkaStorageError.Code
				a.metrics.errorCode(35, req.Version, dir.ErrorCode)
				continue
			}
			dir.TotalBytes, dir.UsableBytes = total, usable
		}
	}
	return respond(resp)
}
