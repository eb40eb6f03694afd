package node

// The admin HTTP listener (admin.listen, default 127.0.0.1:9644):
//
//	GET    /metrics          Prometheus text: the node's registry, the series
//	                         below, and the Go runtime's and the process's
//	GET    /healthz          200 while the process is up
//	GET    /readyz           200 once the metadata is loaded and the Kafka
//	                         listener serves, until Stop begins, while the
//	                         node knows an active controller (its metadata
//	                         is current) and no hosted partition is in the
//	                         failed state; 503 otherwise, saying why
//	GET    /v1/actors        the live actor tree: {"actors": [{"name", "kind",
//	                         "mailbox_length", "restarts", "role", "epoch",
//	                         "last_failure": {"time", "cause", "directive"},
//	                         "children": [...]}]}
//	GET    /v1/events        actor events (?since=SEQ&limit=N): {"events": [...], "next": SEQ}
//	GET    /v1/cluster       the cluster as this node knows it: {"cluster_id", "node",
//	                         "quorum": {"leader", "term", "commit_index", "applied_index",
//	                         "voters", "observers": [{"id", "log_end", "lag",
//	                         "last_fetch_ms", "last_caught_up_ms"}]}, "brokers": [{"id",
//	                         "host", "port", "rack", "cluster_addr", "incarnation", "fenced"}]}
//	GET    /v1/share-partitions  the share-partitions this node leads that have an
//	                         actor (?group=G: of one share group), with what each
//	                         holds in flight: {"node", "share_partitions": [{"group",
//	                         "topic", "partition", "start_offset", "end_offset",
//	                         "in_flight", "acquired", "archived", ...}]} (see shares.go)
//	GET    /v1/node, /v1/faults, /v1/links, /v1/clock, /v1/disk, and their
//	       POST and DELETE: the faults `skein chaos` injects (see chaos.go)
//	GET    /ui/              the web console (package console): its pages, and
//	                         its JSON under /ui/api/
//	GET    /v1/extension-kinds, /v1/extensions[/{name}], POST /v1/extensions,
//	       DELETE /v1/extensions/{name}: the extension kinds of this binary
//	       and the cluster's extension instances (see extensions.go)
//
// The series of /metrics, by what they describe. Every label takes a
// bounded set of values: API names and versions served, error names,
// listeners, actor kinds (never an actor's name: /v1/actors has each
// actor), and topics, partitions and groups of the cluster; the series of
// a deleted topic go at the next scrape.
//
//	Kafka requests (transport/metrics.go)
//	  skein_requests_total{api,version}          requests decoded, by API name (Produce, Fetch, ...) and version
//	  skein_request_errors_total{api,version,error}  error codes answered (per partition where the API answers so),
//	                                             by Kafka error name; code 0 is never counted
//	  skein_request_duration_seconds{api}        histogram: decode to response
//	  skein_open_connections{listener}, skein_authentications_total{listener,mechanism,result},
//	  skein_connections_refused_total{listener,reason}, skein_authorization_denials_total{resource_type,operation},
//	  skein_connection_accept_throttle_seconds_total{listener}, skein_quota_throttle_seconds_total{quota}
//	Topics (transport/topic_metrics.go)
//	  skein_topic_records_in_total{topic}        records produced and appended by this node's leaders, once per append
//	  skein_topic_bytes_in_total{topic}          their batches' bytes as stored
//	  skein_topic_records_out_total{topic}       records served to consumers (Fetch: offsets from the fetch offset to
//	                                             the end of the batches served; ShareFetch: records acquired)
//	  skein_topic_bytes_out_total{topic}         their bytes; followers' fetches are skein_replication_bytes_out_total
//	Reads from followers, KIP-392 (transport/metrics.go)
//	  skein_fetch_follower_records_total         records served to consumers from partitions this node follows
//	                                             (counted as skein_topic_records_out_total counts them)
//	  skein_fetch_follower_bytes_total           their bytes
//	  skein_fetch_preferred_read_replica_total{by}  partitions answered with a preferred read replica instead of
//	                                             records: by="leader" sending a consumer to a replica in its rack
//	                                             (replica.selector.class), by="follower" sending it back to the
//	                                             leader when the follower is not in sync
//	Consumer groups, from the group's coordinator (group_lag.go)
//	  skein_consumer_group_committed_offset{group,topic,partition}
//	  skein_consumer_group_lag{group,topic,partition}  high watermark minus committed offset, never below 0
//	Partitions and replication (this file)
//	  skein_partition_log_size_bytes{topic,partition}, skein_partition_log_segments{topic,partition},
//	  skein_partition_lso_lag_offsets{topic,partition}  high watermark minus last stable offset, on the leader
//	  skein_isr_shrinks_total, skein_isr_expands_total, skein_replication_bytes_in_total,
//	  skein_replication_bytes_out_total, skein_follower_lag_offsets{topic,partition,replica},
//	  skein_follower_lag_seconds{topic,partition,replica},
//	  skein_replication_throttled_bytes_total{side}   record bytes of throttled replicas (KIP-73) counted against
//	                                             leader.replication.throttled.rate (side="leader") or
//	                                             follower.replication.throttled.rate (side="follower")
//	  skein_replication_throttled_partitions_total{side}  partitions held back because that rate was exceeded:
//	                                             answered without records (leader), left out of a fetch (follower)
//	Actors (actors/tree.go), by kind: the Go type of the actor, or the kind it names
//	  skein_actors{kind}                         live actors
//	  skein_actor_mailbox_length{kind}           messages queued, summed over the kind's actors
//	  skein_actor_mailbox_length_max{kind}       the longest mailbox of the kind
//	  skein_actor_restarts_total{kind}, skein_actor_failures_total{kind},
//	  skein_actor_recovery_seconds{kind}         histogram: failure to restarted
//	Files and durability (files.go)
//	  skein_open_files, skein_open_files_max, skein_file_cache_{hits,misses,evictions}_total,
//	  skein_sync_rounds_total, skein_sync_logs_total, skein_log_lines_suppressed_total,
//	  skein_partitions_failed{cause}, skein_log_dir_offline{dir}
//	Cluster and remoting (cluster_metrics.go)
//	  skein_quorum_{leader,term,commit_index,applied_index}, skein_broker_heartbeats_sent_total,
//	  skein_controller_heartbeats_received_total, skein_cluster_brokers{state},
//	  skein_cluster_offline_partitions, skein_under_replicated_partitions,
//	  skein_remote_frames_{sent,received}_total{type}, skein_remote_dropped_total{reason},
//	  skein_remote_queued_bytes{peer}
//	Transactions (this file), share groups (shares.go), extensions (extension_runtime.go), chaos (chaos.go)
//	  skein_transactions_{ongoing,committed_total,aborted_total,timed_out_total},
//	  skein_share_records_total{event}, skein_share_state_writes_total, skein_share_state_write_failures_total,
//	  skein_extension_records_{processed,emitted,skipped}_total{instance,kind},
//	  skein_extension_restarts_total{instance,kind}, skein_extension_lag{instance,kind},
//	  skein_extension_partitions{instance,kind,state}, skein_chaos_faults_active{type},
//	  skein_chaos_faults_injected_total{type}
//
// Errors are JSON, {"error": "..."}. The listener has no authentication:
// bind it to loopback or a private network (its fault API breaks the
// node on purpose, when chaos.enable lets it).

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/console"
	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/partition"
	"github.com/skeinlog/skein/security"
	"github.com/skeinlog/skein/txn"
)

// maxAdminBody bounds a request body of the admin API.
const maxAdminBody = 64 << 10

// adminServer is the admin HTTP listener of a node.
type adminServer struct {
	n   *Node
	ln  net.Listener
	srv *http.Server
	// cancel ends what runs as long as the listener: the setting of the
	// configuration's extensions.
	cancel context.CancelFunc
	// console are the web console's Kafka clients, one per user.
	console *consoleClients
}

// startAdmin binds admin.listen and serves the admin API until close.
func (n *Node) startAdmin() (*adminServer, error) {
	ln, err := net.Listen("tcp", n.cfg.AdminListen)
	if err != nil {
		return nil, fmt.Errorf("node: admin listen: %w", err)
	}
	if n.cfg.AdminKeystoreLocation != "" {
		tc, err := security.NewServerTLS(security.TLSFiles{Listener: "ADMIN", Keystore: n.cfg.AdminKeystoreLocation, ClientAuth: "none",
			Protocols: n.cfg.TLS.Protocols(), CipherSuites: n.cfg.TLS.Ciphers()}, n.log)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("node: admin.ssl.keystore.location: %w", err)
		}
		ln = tls.NewListener(ln, tc.Config())
	}
	a := &adminServer{n: n, ln: ln, console: newConsoleClients(n)}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(n.metrics, promhttp.HandlerOpts{
		ErrorLog: promLogger{n}, ErrorHandling: promhttp.ContinueOnError,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", a.readyz)
	mux.HandleFunc("GET /v1/actors", a.actors)
	mux.HandleFunc("GET /v1/events", a.events)
	mux.HandleFunc("GET /v1/cluster", a.cluster)
	mux.HandleFunc("GET /v1/share-partitions", a.sharePartitions)
	a.chaosRoutes(mux)
	a.extensionRoutes(mux)
	mux.Handle("/ui/", console.Handler(n.consoleConfig(a.console)))
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	a.srv = &http.Server{
		Handler:           guardAdmin(n.cfg, n.kafka.sasls(), n.authorizer, n.log, mux),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error().Err(err).Msg("admin listener failed")
		}
	}()
	// The extensions of the node's configuration are set as the admin
	// API sets them, once the node has loaded the cluster's metadata.
	var ctx context.Context
	ctx, a.cancel = context.WithCancel(context.Background())
	go n.setConfiguredExtensions(ctx)
	return a, nil
}

// close stops accepting and waits for the requests in progress, until ctx
// ends; then it closes the rest.
func (a *adminServer) close(ctx context.Context) error {
	if a.cancel != nil {
		a.cancel()
	}
	defer a.console.close()
	if err := a.srv.Shutdown(ctx); err != nil {
		a.srv.Close()
		return err
	}
	return nil
}

func (a *adminServer) readyz(w http.ResponseWriter, _ *http.Request) {
	if reason := a.n.notReady(); reason != "" {
		http.Error(w, reason, http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

func (a *adminServer) actors(w http.ResponseWriter, _ *http.Request) {
	roots := a.n.tree.Snapshot()
	if roots == nil {
		roots = []*actors.ActorInfo{}
	}
	writeJSON(w, http.StatusOK, struct {
		Actors []*actors.ActorInfo `json:"actors"`
	}{roots})
}

// clusterJSON is /v1/cluster: the cluster as this node's image and
// controller know it, with what Kafka's APIs do not carry (incarnations,
// remoting addresses).
type clusterJSON struct {
	ClusterID string       `json:"cluster_id"`
	Node      int32        `json:"node"` // the node answering
	Quorum    quorumJSON   `json:"quorum"`
	Brokers   []brokerJSON `json:"brokers"`
}

type quorumJSON struct {
	Leader  int32  `json:"leader"` // -1 when none is known
	Term    uint64 `json:"term"`
	Commit  uint64 `json:"commit_index"`
	Applied uint64 `json:"applied_index"`
	// Voters and Observers are the active controller's view of them
	// (DescribeQuorum's), absent when it does not answer in time.
	Voters    []voterJSON `json:"voters,omitempty"`
	Observers []voterJSON `json:"observers,omitempty"`
}

// voterJSON is a member of the quorum as the active controller sees it:
// its log's end (a raft index), how far that is behind the commit index,
// and when it last fetched and was caught up (Unix ms, -1 unknown).
type voterJSON struct {
	ID             int32  `json:"id"`
	LogEnd         uint64 `json:"log_end"`
	Lag            uint64 `json:"lag"`
	LastFetchMs    int64  `json:"last_fetch_ms"`
	LastCaughtUpMs int64  `json:"last_caught_up_ms"`
}

type brokerJSON struct {
	ID          int32  `json:"id"`
	Host        string `json:"host"`
	Port        int32  `json:"port"`
	Rack        string `json:"rack,omitempty"`
	ClusterAddr string `json:"cluster_addr,omitempty"`
	Incarnation uint64 `json:"incarnation"`
	Fenced      bool   `json:"fenced"`
}

func (a *adminServer) cluster(w http.ResponseWriter, _ *http.Request) {
	im, s := a.n.image.Load(), a.n.quorumStatus()
	out := clusterJSON{ClusterID: im.ClusterID, Node: a.n.cfg.NodeID, Brokers: []brokerJSON{},
		Quorum: quorumJSON{Leader: s.Leader, Term: s.Term, Commit: s.Commit, Applied: s.Applied}}
	if d := a.n.describeQuorum(s.Leader); d != nil {
		out.Quorum.Voters, out.Quorum.Observers = votersJSON(d.HighWatermark, d.Voters), votersJSON(d.HighWatermark, d.Observers)
	}
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		out.Brokers = append(out.Brokers, brokerJSON{ID: b.ID, Host: b.Host, Port: b.Port, Rack: b.Rack,
			ClusterAddr: b.ClusterAddr, Incarnation: b.Incarnation, Fenced: b.Fenced})
	}
	writeJSON(w, http.StatusOK, out)
}

// describeQuorum asks the active controller, leader, for the quorum's
// state, as DescribeQuorum does; nil when there is none or it does not
// answer within a second.
func (n *Node) describeQuorum(leader int32) *controller.QuorumDescription {
	pid := n.peers[leader]
	if leader == n.cfg.NodeID {
		pid = n.children.Load().controller
	}
	if leader < 0 || pid == nil {
		return nil
	}
	res, err := actors.Ask(n.sys, pid, &controller.DescribeQuorum{}, time.Second)
	if d, ok := res.(*controller.QuorumDescription); ok && err == nil && d.Err == nil {
		return d
	}
	return nil
}

func votersJSON(commit uint64, vs []controller.VoterState) []voterJSON {
	var out []voterJSON
	for _, v := range vs {
		lag := uint64(0)
		if commit > v.LogEnd {
			lag = commit - v.LogEnd
		}
		out = append(out, voterJSON{ID: v.ID, LogEnd: v.LogEnd, Lag: lag, LastFetchMs: v.LastFetchMs, LastCaughtUpMs: v.LastCaughtUpMs})
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // the client may be gone; nothing to do about it
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// promLogger sends promhttp's errors to the node's log.
type promLogger struct{ n *Node }

func (l promLogger) Println(v ...any) { l.n.log.Error().Msg(fmt.Sprint(v...)) }

// registerNodeMetrics adds the collectors the admin API exports beside
// transport's: the actor tree, the partitions' logs, and the Go runtime
// and process.
func (n *Node) registerNodeMetrics() {
	n.metrics.MustRegister(
		n.tree,
		partitionCollector{n.registry},
		replicationCollector{n},
		txnCollector{&n.txnStats},
		shareCollector{&n.shareStats},
		newGroupLagCollector(n),
		extensionCollector{n.extensions},
		fileCollector{n.files, n.syncer, n.registry, n.failures, n.logDirs},
		clusterCollector{n},
		chaosCollector{n},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
}

// partitionCollector reads each hosted partition's log size and segment
// count from its published view at scrape time: no message, no lock
// beyond the registry's.
type partitionCollector struct{ reg *partition.Registry }

var (
	logSizeDesc = prometheus.NewDesc("skein_partition_log_size_bytes",
		"Bytes in a partition's segment files (batches, not indexes).", []string{"topic", "partition"}, nil)
	logSegmentsDesc = prometheus.NewDesc("skein_partition_log_segments",
		"Segments of a partition's log, the active one included.", []string{"topic", "partition"}, nil)
	lsoLagDesc = prometheus.NewDesc("skein_partition_lso_lag_offsets",
		"How far the last stable offset of a partition this node leads is behind its high watermark: the offsets of transactions not over yet, which read_committed consumers wait for.",
		[]string{"topic", "partition"}, nil)
)

// replicationCollector reports the node's replication: ISR changes and
// bytes from its Stats, and each follower's lag behind the partitions
// this node leads, from their views.
type replicationCollector struct{ n *Node }

var (
	isrShrinksDesc = prometheus.NewDesc("skein_isr_shrinks_total",
		"ISR shrinks of partitions this node leads, committed (Kafka's IsrShrinksPerSec).", nil, nil)
	isrExpandsDesc = prometheus.NewDesc("skein_isr_expands_total",
		"ISR expansions of partitions this node leads, committed (Kafka's IsrExpandsPerSec).", nil, nil)
	replicationBytesInDesc = prometheus.NewDesc("skein_replication_bytes_in_total",
		"Record bytes this node's followers fetched from leaders on other nodes.", nil, nil)
	replicationBytesOutDesc = prometheus.NewDesc("skein_replication_bytes_out_total",
		"Record bytes this node's leaders served to followers on other nodes.", nil, nil)
	followerLagOffsetsDesc = prometheus.NewDesc("skein_follower_lag_offsets",
		"How far a follower's last fetch was behind the end of a partition this node leads.", []string{"topic", "partition", "replica"}, nil)
	replicationThrottledBytesDesc = prometheus.NewDesc("skein_replication_throttled_bytes_total",
		"Record bytes of throttled replicas (KIP-73) counted against this node's leader.replication.throttled.rate (side=leader) or follower.replication.throttled.rate (side=follower).", []string{"side"}, nil)
	replicationThrottledPartitionsDesc = prometheus.NewDesc("skein_replication_throttled_partitions_total",
		"Partitions held back because this node's replication rate was exceeded: answered without records (side=leader), left out of a fetch (side=follower).", []string{"side"}, nil)
	followerLagSecondsDesc = prometheus.NewDesc("skein_follower_lag_seconds",
		"Seconds since a follower of a partition this node leads was last caught up (it leaves the ISR past replica.lag.time.max.ms).", []string{"topic", "partition", "replica"}, nil)
)

func (c replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{isrShrinksDesc, isrExpandsDesc, replicationBytesInDesc, replicationBytesOutDesc, followerLagOffsetsDesc, followerLagSecondsDesc,
		replicationThrottledBytesDesc, replicationThrottledPartitionsDesc} {
		ch <- d
	}
}

func (c replicationCollector) Collect(ch chan<- prometheus.Metric) {
	s := &c.n.replication
	for d, v := range map[*prometheus.Desc]uint64{isrShrinksDesc: s.ISRShrinks.Load(), isrExpandsDesc: s.ISRExpands.Load(),
		replicationBytesInDesc: s.BytesIn.Load(), replicationBytesOutDesc: s.BytesOut.Load()} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	q := c.n.registry.Quotas()
	for side, quota := range map[string]*partition.Quota{"leader": &q.Leader, "follower": &q.Follower} {
		ch <- prometheus.MustNewConstMetric(replicationThrottledBytesDesc, prometheus.CounterValue, float64(quota.Bytes.Load()), side)
		ch <- prometheus.MustNewConstMetric(replicationThrottledPartitionsDesc, prometheus.CounterValue, float64(quota.Held.Load()), side)
	}
	now := time.Now()
	for _, h := range c.n.registry.All() {
		v := h.View()
		if v == nil {
			continue
		}
		p := strconv.Itoa(int(h.Partition))
		for _, f := range v.Followers {
			r := strconv.Itoa(int(f.Replica))
			ch <- prometheus.MustNewConstMetric(followerLagOffsetsDesc, prometheus.GaugeValue, float64(f.Offsets), h.Topic, p, r)
			// NB: a caught-up follower counts 0: an idle leader publishes no
			// new views, so CaughtUp is only as recent as its last one.
			lag := 0.0
			if f.Offsets > 0 {
				lag = now.Sub(f.CaughtUp).Seconds()
			}
			ch <- prometheus.MustNewConstMetric(followerLagSecondsDesc, prometheus.GaugeValue, lag, h.Topic, p, r)
		}
	}
}

func (c partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- logSizeDesc
	ch <- logSegmentsDesc
	ch <- lsoLagDesc
}

func (c partitionCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.reg.All() {
		v := h.View()
		if v == nil || v.Log == nil {
			continue // still loading, or failed before it loaded
		}
		p := strconv.Itoa(int(h.Partition))
		ch <- prometheus.MustNewConstMetric(logSizeDesc, prometheus.GaugeValue, float64(v.Log.Size()), h.Topic, p)
		ch <- prometheus.MustNewConstMetric(logSegmentsDesc, prometheus.GaugeValue, float64(v.Log.Segments()), h.Topic, p)
		if v.LeaderEpoch >= 0 {
			ch <- prometheus.MustNewConstMetric(lsoLagDesc, prometheus.GaugeValue, float64(v.Log.HighWatermark-v.Log.LastStableOffset), h.Topic, p)
		}
	}
}

// txnCollector reports the transactions of the ids this node coordinates.
type txnCollector struct{ s *txn.Stats }

var (
	txnOngoingDesc = prometheus.NewDesc("skein_transactions_ongoing",
		"Transactions begun and not complete, of the transactional ids this node coordinates.", nil, nil)
	txnCommittedDesc = prometheus.NewDesc("skein_transactions_committed_total",
		"Transactions this node's coordinators completed with a commit.", nil, nil)
	txnAbortedDesc = prometheus.NewDesc("skein_transactions_aborted_total",
		"Transactions this node's coordinators completed with an abort, timed out ones included.", nil, nil)
	txnTimedOutDesc = prometheus.NewDesc("skein_transactions_timed_out_total",
		"Transactions this node's coordinators aborted because they outlived their timeout.", nil, nil)
)

func (c txnCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{txnOngoingDesc, txnCommittedDesc, txnAbortedDesc, txnTimedOutDesc} {
		ch <- d
	}
}

func (c txnCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(txnOngoingDesc, prometheus.GaugeValue, float64(c.s.Ongoing.Load()))
	for d, v := range map[*prometheus.Desc]uint64{txnCommittedDesc: c.s.Committed.Load(), txnAbortedDesc: c.s.Aborted.Load(), txnTimedOutDesc: c.s.TimedOut.Load()} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
}
