// Package console is the web console every node serves on its admin
// listener at /ui: pages of plain JavaScript and CSS embedded in the
// binary (static/, no build step), which read the admin API's JSON
// (/v1/actors, /v1/events, /v1/cluster, /v1/faults, ...) and the
// console's own JSON under /ui/api/, which this package answers with a
// Kafka client of the logged-in user.
//
// The console has no login of its own: the admin listener's guard
// (node/admin_guard.go) authenticates each request when the Kafka
// listeners do, with the cluster's own users (HTTP Basic with a SASL
// user's password, or a Bearer token), and the console's Kafka client
// acts as that user, so the cluster's ACLs decide what the pages show.
//
//	GET /ui/                       the pages (static/)
//	GET /ui/api/settings           {"chaos_enabled", "auth_enabled", "user",
//	                               "super_user", "node_id", "can_inject"}:
//	                               can_inject is chaos_enabled and, with
//	                               authentication, super_user; without it,
//	                               console.faults.without.auth (nobody is a
//	                               super user then)
//	GET /ui/api/topics             every topic the user may describe:
//	                               {"topics": [{"name", "id", "internal",
//	                               "partitions": [{"partition", "leader",
//	                               "leader_epoch", "replicas", "isr",
//	                               "offline_replicas", "offline",
//	                               "under_replicated", "start_offset",
//	                               "end_offset", "size_bytes", "error"?}],
//	                               "size_bytes", "records", "bytes_in_total",
//	                               "bytes_out_total", "records_in_total",
//	                               "records_out_total", "error"?}],
//	                               "brokers": {"at_ms", "nodes",
//	                               "missing_nodes", "bytes_in_total", ...},
//	                               "sizes_error"?}
//	GET /ui/api/topics/{topic}     one topic as above, its "brokers" and
//	                               "configs": [{"name", "value", "source",
//	                               "sensitive"}]
//	GET /ui/api/messages?topic=T&partition=P&offset=O|timestamp=MS|key=K
//	                    &limit=N&decode=text|json|hex
//	                               {"topic", "partition", "start_offset",
//	                               "end_offset", "from", "records":
//	                               [{"partition", "offset", "timestamp",
//	                               "key", "key_encoding", "value",
//	                               "value_encoding", "headers": [{"key",
//	                               "value", "value_encoding"}],
//	                               "truncated"}], "scanned", "complete",
//	                               "next_offset", "key"?}: from an offset
//	                               (negative: the last -O), the first at or
//	                               after a time (ListOffsets by time), or the
//	                               records of key K in the one partition
//	                               Kafka's default partitioner (murmur2) gives
//	                               it, read from its start; limit 50 by
//	                               default, at most 500
//	GET /ui/api/groups             {"groups": [{"name", "type", "state",
//	                               "protocol", "coordinator", "members",
//	                               "lag", "error"?}]}
//	GET /ui/api/groups/{group}     {"name", "type", "state", "protocol",
//	                               "coordinator", "epoch", "assignment_epoch",
//	                               "members": [{"member_id", "instance_id",
//	                               "client_id", "host", "assignment": {topic:
//	                               [partitions]}}], "offsets": [{"topic",
//	                               "partition", "member", "committed",
//	                               "start_offset"? (share groups),
//	                               "end_offset", "lag", "error"?}], "lag"}
//	GET /ui/api/transactions       {"transactions": [{"transactional_id",
//	                               "state", "producer_id", "producer_epoch",
//	                               "timeout_ms", "start_ms", "coordinator",
//	                               "partitions": [{"topic", "partition"}],
//	                               "error"?}], "truncated"}
//	GET /ui/api/producers?topic=T  {"topic", "partitions": [{"partition",
//	                               "leader", "producers": [{"producer_id",
//	                               "producer_epoch", "last_sequence",
//	                               "last_timestamp", "coordinator_epoch",
//	                               "current_txn_start_offset"}], "error"?}]}
//
// Sizes are the leader replica's (DescribeLogDirs, which needs DESCRIBE
// on the cluster: -1 and "sizes_error" without it); offsets -1 when not
// known. The *_total counters are cumulative, summed over the nodes in
// "nodes" (the frontend differences two answers for rates); a node that
// did not answer within a second is in "missing_nodes".
//
// Messages: keys, values and header values come as decode asks: "hex";
// "json", indented, when the bytes parse as JSON; "text" when they are
// UTF-8; hex otherwise. Each is cut at 64 KiB ("truncated"); a null key
// or value (a tombstone) is null. A read is a consumer of its own acting
// as the user (read_uncommitted), from "from" to the end offset seen at
// the start, and stops at the limit, that end, 5 s, or, for a key, after
// 200,000 records or 256 MiB scanned ("complete" false when it stopped
// short; "next_offset" continues).
//
// Groups: lag is end offset less the committed offset (of a share
// group, less the share-partition start offset); an assigned partition
// with no commit shows committed -1 and the whole partition as lag.
// Streams groups are listed but not described here (501).
//
// Errors are {"error": "..."}, with Kafka's error name where one applies
// (403 for an authorization failure, 404 for what does not exist, 502
// for other Kafka errors, 504 when the cluster did not answer within 5
// s). Every request's Kafka work is bounded by 5 s.
package console

import (
	"context"
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Config is what a node gives its console.
type Config struct {
	// Client returns a Kafka client acting as the user who sent r (the
	// node keeps and reuses them); the console never closes it.
	Client ClientFunc
	// Who returns the user the admin listener authenticated r as
	// ("User:ANONYMOUS" without authentication) and whether that user
	// may change things through the admin API (a super user).
	Who func(r *http.Request) (user string, superUser bool)
	// TopicCounters returns every topic's produce and consume counters,
	// summed over the cluster's nodes that answer before ctx ends.
	TopicCounters func(ctx context.Context) Counters
	// NodeID is the node serving the console.
	NodeID int32
	// ChaosEnabled is the node's chaos.enable: the fault buttons show
	// only then.
	ChaosEnabled bool
	// AuthEnabled is whether the admin listener authenticates its
	// users (the node has a SASL listener).
	AuthEnabled bool
	// FaultsWithoutAuth is console.faults.without.auth: without
	// authentication, everyone sees the fault buttons (with
	// chaos.enable).
	FaultsWithoutAuth bool
}

// Handler serves the console under /ui/: the pages, and /ui/api/.
func Handler(cfg Config) http.Handler {
	a := &api{cfg: cfg}
	mux := http.NewServeMux()
	pages, _ := fs.Sub(static, "static")
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", http.FileServerFS(pages)))
	mux.HandleFunc("GET /ui/api/settings", a.settings)
	mux.HandleFunc("GET /ui/api/topics", a.topics)
	mux.HandleFunc("GET /ui/api/topics/{topic}", a.topic)
	mux.HandleFunc("GET /ui/api/messages", a.messages)
	mux.HandleFunc("GET /ui/api/groups", a.groups)
	mux.HandleFunc("GET /ui/api/groups/{group}", a.group)
	mux.HandleFunc("GET /ui/api/transactions", a.transactions)
	mux.HandleFunc("GET /ui/api/producers", a.producers)
	mux.HandleFunc("GET /ui/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "console: no such API: "+r.Method+" "+r.URL.Path)
	})
	return mux
}

type settingsJSON struct {
	ChaosEnabled bool   `json:"chaos_enabled"`
	AuthEnabled  bool   `json:"auth_enabled"`
	User         string `json:"user"`
	SuperUser    bool   `json:"super_user"`
	NodeID       int32  `json:"node_id"`
	CanInject    bool   `json:"can_inject"`
}

// settings is GET /ui/api/settings: what the pages show to whom.
func (a *api) settings(w http.ResponseWriter, r *http.Request) {
	s := settingsJSON{ChaosEnabled: a.cfg.ChaosEnabled, AuthEnabled: a.cfg.AuthEnabled, NodeID: a.cfg.NodeID}
	if a.cfg.Who != nil {
		s.User, s.SuperUser = a.cfg.Who(r)
	}
	s.CanInject = s.ChaosEnabled && (s.SuperUser || !s.AuthEnabled && a.cfg.FaultsWithoutAuth)
	writeJSON(w, http.StatusOK, s)
}
