package console

import (
	"encoding/json"
	"net/http"

	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientFunc returns a Kafka client acting as the user who sent r.
type ClientFunc func(r *http.Request) (*kgo.Client, error)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the browser may be gone; nothing to do about it
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
