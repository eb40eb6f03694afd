package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Admin is a client of one node's admin API (see node/chaos.go for the
// endpoints). Its methods are safe for concurrent use. The types it sends
// and receives (NodeInfo, Fault, Link, Clock, Disk) are the API's own: the
// node serves them too.
type Admin struct {
	// Addr is the node's admin listener, host:port.
	Addr string
	// Access is the scheme and credentials to reach it with.
	Access Access
	// HTTP is the client to use; nil means Access's with a 10-second
	// timeout.
	HTTP *http.Client
}

// APIError is an answer of the admin API other than the one expected.
type APIError struct {
	Addr, Method, Path string
	Status             int
	Message            string // the {"error": ...} of the answer, or its body
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s %s: %d %s", e.Addr, e.Method, e.Path, e.Status, e.Message)
}

// ErrRefused is wrapped by the error of a fault a node refuses because it
// did not opt in (chaos.enable).
var ErrRefused = errors.New("chaos is not enabled on the node")

func (e *APIError) Unwrap() error {
	if e.Status == http.StatusForbidden && strings.Contains(e.Message, "chaos.enable") {
		return ErrRefused
	}
	return nil
}

// do sends a request with body (nil for none, else JSON-encoded) and
// decodes the answer into out (nil to discard it) when it has status want.
func (a *Admin) do(ctx context.Context, method, path string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Access.URL(a.Addr, path), rd)
	if err != nil {
		return err
	}
	a.Access.Authorize(req)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := a.HTTP
	if hc == nil {
		hc = a.Access.Client(10 * time.Second)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s %s: reading the answer: %w", a.Addr, method, path, err)
	}
	if resp.StatusCode != want {
		msg := string(bytes.TrimSpace(data))
		var e struct{ Error string }
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		return &APIError{Addr: a.Addr, Method: method, Path: path, Status: resp.StatusCode, Message: msg}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s %s: %w", a.Addr, method, path, err)
	}
	return nil
}

// NodeInfo is GET /v1/node.
type NodeInfo struct {
	Node        int32  `json:"node"`
	PID         int    `json:"pid"`
	Incarnation uint64 `json:"incarnation"`
	Kafka       string `json:"kafka"`
	Cluster     string `json:"cluster"`
	DataDir     string `json:"data_dir"`
	Chaos       bool   `json:"chaos_enable"`
}

// Node asks who the node is.
func (a *Admin) Node(ctx context.Context) (NodeInfo, error) {
	var n NodeInfo
	err := a.do(ctx, http.MethodGet, "/v1/node", nil, http.StatusOK, &n)
	return n, err
}

// Actor is an actor of GET /v1/actors.
type Actor struct {
	Name          string   `json:"name"`
	Kind          string   `json:"kind"`
	Role          string   `json:"role,omitempty"`
	Epoch         int32    `json:"epoch,omitempty"`
	MailboxLength int64    `json:"mailbox_length"`
	Restarts      int64    `json:"restarts"`
	Children      []*Actor `json:"children"`
}

// Actors returns the node's live actor tree.
func (a *Admin) Actors(ctx context.Context) ([]*Actor, error) {
	var out struct {
		Actors []*Actor `json:"actors"`
	}
	err := a.do(ctx, http.MethodGet, "/v1/actors", nil, http.StatusOK, &out)
	return out.Actors, err
}

// Fault is an actor fault of the admin API (see actors.Fault); durations
// are Go's ("250ms").
type Fault struct {
	ID      uint64  `json:"id,omitempty"`
	Actor   string  `json:"actor"`
	Kind    string  `json:"kind"`
	Message string  `json:"message,omitempty"`
	Count   int     `json:"count,omitempty"`
	Delay   string  `json:"delay,omitempty"`
	After   bool    `json:"after,omitempty"`
	For     string  `json:"for,omitempty"`
	Every   string  `json:"every,omitempty"`
	Rate    float64 `json:"rate,omitempty"`
	Expires string  `json:"expires,omitempty"`
	Fired   int     `json:"fired,omitempty"`
}

// Faults lists the node's actor faults.
func (a *Admin) Faults(ctx context.Context) ([]Fault, error) {
	var out struct {
		Faults []Fault `json:"faults"`
	}
	err := a.do(ctx, http.MethodGet, "/v1/faults", nil, http.StatusOK, &out)
	return out.Faults, err
}

// AddFault injects an actor fault and returns it as set.
func (a *Admin) AddFault(ctx context.Context, f Fault) (Fault, error) {
	var out Fault
	err := a.do(ctx, http.MethodPost, "/v1/faults", f, http.StatusCreated, &out)
	return out, err
}

// Link is a fault on the node's link to a peer node.
type Link struct {
	Peer    int32   `json:"peer"`
	Address string  `json:"address,omitempty"`
	Cut     bool    `json:"cut,omitempty"`
	Drop    float64 `json:"drop,omitempty"`
	Delay   string  `json:"delay,omitempty"`
	Jitter  string  `json:"jitter,omitempty"`
	For     string  `json:"for,omitempty"`
	Expires string  `json:"expires,omitempty"`
	// Both: the peer sets the same fault on its side, toward this node.
	Both bool `json:"both,omitempty"`
}

// Links lists the node's link faults.
func (a *Admin) Links(ctx context.Context) ([]Link, error) {
	var out struct {
		Links []Link `json:"links"`
	}
	err := a.do(ctx, http.MethodGet, "/v1/links", nil, http.StatusOK, &out)
	return out.Links, err
}

// SetLink sets the fault on the node's link to l.Peer.
func (a *Admin) SetLink(ctx context.Context, l Link) error {
	return a.do(ctx, http.MethodPost, "/v1/links", l, http.StatusCreated, nil)
}

// Clock is the node's clock fault.
type Clock struct {
	Offset  string `json:"offset,omitempty"`
	Jump    string `json:"jump,omitempty"`
	For     string `json:"for,omitempty"`
	Expires string `json:"expires,omitempty"`
	Now     string `json:"now,omitempty"`
}

// Clock reads the node's clock offset.
func (a *Admin) Clock(ctx context.Context) (Clock, error) {
	var c Clock
	err := a.do(ctx, http.MethodGet, "/v1/clock", nil, http.StatusOK, &c)
	return c, err
}

// SetClock sets the node's clock offset (Offset) or steps it (Jump).
func (a *Admin) SetClock(ctx context.Context, c Clock) (Clock, error) {
	var out Clock
	err := a.do(ctx, http.MethodPost, "/v1/clock", c, http.StatusOK, &out)
	return out, err
}

// Disk is the node's disk fault: Fail is writes, syncs or full.
type Disk struct {
	Fail string `json:"fail,omitempty"`
	// Dir confines the fault to one of the node's log dirs (its files'
	// operations; the node-wide syncfs rounds are not failed); empty:
	// the whole node.
	Dir     string `json:"dir,omitempty"`
	For     string `json:"for,omitempty"`
	Expires string `json:"expires,omitempty"`
}

// Disk reads the node's disk fault (Fail empty: none).
func (a *Admin) Disk(ctx context.Context) (Disk, error) {
	var d Disk
	err := a.do(ctx, http.MethodGet, "/v1/disk", nil, http.StatusOK, &d)
	return d, err
}

// SetDisk sets the node's disk fault.
func (a *Admin) SetDisk(ctx context.Context, d Disk) error {
	return a.do(ctx, http.MethodPost, "/v1/disk", d, http.StatusCreated, nil)
}

// Heal removes every fault of the node and returns how many there were.
func (a *Admin) Heal(ctx context.Context) (int, error) {
	var out struct {
		Removed int `json:"removed"`
	}
	err := a.do(ctx, http.MethodDelete, "/v1/chaos", nil, http.StatusOK, &out)
	return out.Removed, err
}

// Event is an entry of the node's supervision journal, GET /v1/events.
type Event struct {
	Seq             uint64    `json:"seq"`
	Time            time.Time `json:"time"`
	Actor           string    `json:"actor"`
	Kind            string    `json:"kind"`
	Type            string    `json:"type"`
	Cause           string    `json:"cause,omitempty"`
	Role            string    `json:"role,omitempty"`
	Epoch           int32     `json:"epoch,omitempty"`
	RecoverySeconds float64   `json:"recovery_seconds,omitempty"`
}

// Events returns the journal's events after seq, and the seq to ask after
// next.
func (a *Admin) Events(ctx context.Context, since uint64) ([]Event, uint64, error) {
	var out struct {
		Events []Event `json:"events"`
		Next   uint64  `json:"next"`
	}
	err := a.do(ctx, http.MethodGet, fmt.Sprintf("/v1/events?since=%d", since), nil, http.StatusOK, &out)
	return out.Events, out.Next, err
}

// Ready reports whether the node's /readyz answers 200, and its reason
// when not.
func (a *Admin) Ready(ctx context.Context) (bool, string) {
	err := a.do(ctx, http.MethodGet, "/readyz", nil, http.StatusOK, nil)
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}

// PowerLoss makes the node lose what it wrote but did not sync, and die
// (SIGKILL). The node may die before its answer is read: an error reading
// the answer is not one.
func (a *Admin) PowerLoss(ctx context.Context) error {
	err := a.do(ctx, http.MethodPost, "/v1/power-loss", nil, http.StatusOK, nil)
	var api *APIError
	if err == nil || errors.As(err, &api) {
		return err
	}
	if ctx.Err() != nil {
		return err
	}
	return nil // the connection ended with the node
}
