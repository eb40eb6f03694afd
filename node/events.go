package node

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/skeinlog/skein/actors"
)

// maxEventsLimit is the most events one GET /v1/events returns, and the
// default: all the journal holds.
const maxEventsLimit = actors.DefaultJournalCapacity

// eventsJSON is /v1/events: the actor tree's journal after a sequence
// number. Next is the sequence number to ask after next time: the last
// event's, or, with none, the one asked (or the journal's newest, if the
// journal started again since: the node restarted).
type eventsJSON struct {
	Events []actors.Event `json:"events"`
	Next   uint64         `json:"next"`
}

// events serves GET /v1/events?since=SEQ&limit=N: at most limit (default
// and cap: the journal's capacity, 4096) of the journal's events after
// since (default 0: from the oldest it holds), oldest first. A reader
// polls with since set to the last answer's next; a gap in the sequence
// numbers means the journal dropped events before the reader came back
// for them.
func (a *adminServer) events(w http.ResponseWriter, r *http.Request) {
	since, limit := uint64(0), maxEventsLimit
	if s := r.URL.Query().Get("since"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("since %q: not a sequence number", s))
			return
		}
		since = v
	}
	if s := r.URL.Query().Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: not a positive number", s))
			return
		}
		limit = min(v, maxEventsLimit)
	}
	j := a.n.tree.Events()
	out := eventsJSON{Events: j.Since(since, limit)}
	if n := len(out.Events); n > 0 {
		out.Next = out.Events[n-1].Seq
	} else {
		out.Next = min(since, j.Last())
	}
	writeJSON(w, http.StatusOK, out)
}
