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
package console

import (
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
	// ChaosEnabled is the node's chaos.enable: the fault buttons show
	// only then.
	ChaosEnabled bool
}

// Handler serves the console under /ui/: the pages, and /ui/api/.
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	pages, _ := fs.Sub(static, "static")
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", http.FileServerFS(pages)))
	mux.HandleFunc("GET /ui/api/settings", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"chaos_enabled": cfg.ChaosEnabled})
	})
	return mux
}
