package transport

// DescribeLogDirs: v1-4
//
// Behaviour:
//   - With an authorizer: DESCRIBE on the cluster; otherwise v3+ answer
//     CLUSTER_AUTHORIZATION_FAILED and older versions nothing, as Kafka.
//   - One log dir: data.dir (made absolute), since Skein takes exactly one.
//     It lists the partitions this node hosts among those the request names
//     (all of them when Topics is null), each with the size of its segment
//     files from its published view (store.View.Size), read without a
//     message to its actor. A partition still loading has no view yet and
//     is left out, as is one the node does not host, as Kafka does.
//   - OffsetLag is 0 and IsFuture false: Skein has no future replicas
//     (AlterReplicaLogDirs is not served).
//   - v4: TotalBytes and UsableBytes of the filesystem holding data.dir,
//     from statfs; -1 each when statfs fails, and the dir's error is then
//     KAFKA_STORAGE_ERROR.
//
// Version notes: v1 throttling; v2 flexible; v3 top-level error code; v4
// total and usable bytes (KIP-827).

import (
	"cmp"
	"path/filepath"
	"slices"
	"syscall"

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
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = a.Node.DataDir
	if abs, err := filepath.Abs(dir.Dir); err == nil {
		dir.Dir = abs
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
		if wanted != nil && !wanted[partition.Key{Topic: h.Topic, Partition: h.Partition}] {
			continue
		}
		v := h.View()
		if v == nil || v.Log == nil {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != h.Topic {
			t := kmsg.NewDescribeLogDirsResponseDirTopic()
			t.Topic = h.Topic
			dir.Topics = append(dir.Topics, t)
		}
		p := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		p.Partition, p.Size = h.Partition, v.Log.Size()
		t := &dir.Topics[len(dir.Topics)-1]
		t.Partitions = append(t.Partitions, p)
	}
	if req.Version >= 4 {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir.Dir, &st); err != nil {
			a.Logger.Warn().Err(err).Str("dir", dir.Dir).Msg("statfs of data.dir for DescribeLogDirs")
			dir.ErrorCode = kerr.KafkaStorageError.Code
			a.metrics.errorCode(35, req.Version, dir.ErrorCode)
		} else {
			dir.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			dir.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
	}
	resp.Dirs = append(resp.Dirs, dir)
	return respond(resp)
}
