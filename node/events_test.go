package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/skeinlog/skein/actors"
)

// TestEventsEndpoint: /v1/events pages through the tree's journal with
// since and limit, next says where to go on, and bad parameters are 400.
func TestEventsEndpoint(t *testing.T) {
	sys := actors.NewSystem(zerolog.Nop())
	defer sys.Shutdown()
	tree := actors.NewTree(sys, nil)
	defer tree.Close()
	for i := range 5 {
		tree.Events().Append(actors.Event{Actor: fmt.Sprint("a", i), Type: actors.EventStarted})
	}
	a := &adminServer{n: &Node{tree: tree}}
	get := func(query string, wantCode int) eventsJSON {
		t.Helper()
		rec := httptest.NewRecorder()
		a.events(rec, httptest.NewRequest("GET", "/v1/events"+query, nil))
		if rec.Code != wantCode {
			t.Fatalf("GET /v1/events%s = %d %s, want %d", query, rec.Code, rec.Body, wantCode)
		}
		var out eventsJSON
		if wantCode == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("GET /v1/events%s: %v", query, err)
			}
		}
		return out
	}
	for _, tc := range []struct {
		query    string
		first, n int
		wantNext uint64
	}{
		{"", 1, 5, 5},
		{"?since=2", 3, 3, 5},
		{"?since=1&limit=2", 2, 2, 3},
		{"?since=5", 0, 0, 5},
		{"?since=9", 1, 5, 5}, // a journal that started again
	} {
		out := get(tc.query, http.StatusOK)
		if len(out.Events) != tc.n || out.Next != tc.wantNext || (tc.n > 0 && out.Events[0].Seq != uint64(tc.first)) {
			t.Errorf("GET /v1/events%s: %d events from %v, next %d; want %d from %d, next %d",
				tc.query, len(out.Events), out.Events, out.Next, tc.n, tc.first, tc.wantNext)
		}
	}
	for _, q := range []string{"?since=x", "?since=-1", "?limit=0", "?limit=y"} {
		get(q, http.StatusBadRequest)
	}
}
