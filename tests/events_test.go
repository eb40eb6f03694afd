package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// eventJSON is an event in /v1/events.
type eventJSON struct {
	Seq             uint64    `json:"seq"`
	Time            time.Time `json:"time"`
	Actor           string    `json:"actor"`
	Kind            string    `json:"kind"`
	Type            string    `json:"type"`
	Cause           string    `json:"cause"`
	Directive       string    `json:"directive"`
	Role            string    `json:"role"`
	Epoch           int32     `json:"epoch"`
	RecoverySeconds float64   `json:"recovery_seconds"`
}

// events reads /v1/events after since and returns the events of actor
// and the sequence number to ask after next.
func (b *broker) events(since uint64, actor string) ([]eventJSON, uint64) {
	b.t.Helper()
	code, body := b.adminDo("GET", fmt.Sprintf("/v1/events?since=%d", since), "")
	if code != http.StatusOK {
		b.t.Fatalf("GET /v1/events: %d %s", code, body)
	}
	var out struct {
		Events []eventJSON `json:"events"`
		Next   uint64      `json:"next"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		b.t.Fatalf("GET /v1/events: %v\n%s", err, body)
	}
	var mine []eventJSON
	for _, e := range out.Events {
		if e.Actor == actor {
			mine = append(mine, e)
		}
	}
	return mine, out.Next
}

func eventTypes(es []eventJSON) string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Type
	}
	return strings.Join(s, " ")
}

// TestEventsShowHowAPartitionHealed: a partition actor's life as
// /v1/events journals it: started, then its role (leader); a panic
// injected through POST /v1/faults is journaled as failed, with a cause
// that names the injection and the supervisor's directive, then
// restarted, with the same cause and the time it took to recover; a
// reader polling with next sees only what is new. /v1/actors shows the
// partition's role, /metrics the recovery, by kind.
func TestEventsShowHowAPartitionHealed(t *testing.T) {
	b := startBroker(t)
	ctx := ctxFor(t)
	if _, err := b.admin().CreateTopic(ctx, 1, 1, nil, "healed"); err != nil {
		t.Fatal(err)
	}
	const name = "node/1/partitions/healed-0"
	// NB: the Append the panic loses is retried by franz-go after its
	// request timeout: keep that short.
	p := b.client(kgo.DefaultProduceTopic("healed"), kgo.ProduceRequestTimeout(2*time.Second))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("before")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var next uint64
	eventually(t, "the partition started and took its role", func() bool {
		var es []eventJSON
		es, next = b.events(0, name)
		return eventTypes(es) == "started role" && es[1].Role == "leader"
	})
	if a := b.actorRoles()[name]; a.Role != "leader" {
		t.Fatalf("/v1/actors: %s has role %q, want leader", name, a.Role)
	}

	b.injectFault(`{"actor": "` + name + `", "kind": "panic", "message": "Append"}`)
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var es []eventJSON
	eventually(t, "the failure and the restart journaled", func() bool {
		es, _ = b.events(next, name)
		return eventTypes(es) == "failed restarted"
	})
	failed, restarted := es[0], es[1]
	if !strings.Contains(failed.Cause, "injected panic") || failed.Directive != "restart" || failed.Kind == "" {
		t.Errorf("failed event: %+v", failed)
	}
	if restarted.Cause != failed.Cause || restarted.RecoverySeconds <= 0 || restarted.Seq <= failed.Seq {
		t.Errorf("restarted event: %+v (failed: %+v)", restarted, failed)
	}
	// The restarted instance leads again in the same epoch: no role event.
	if a := b.actorRoles()[name]; a.Role != "leader" || a.Restarts != 1 {
		t.Errorf("/v1/actors: %s = %+v, want leader with 1 restart", name, a)
	}
	kind := map[string]string{"kind": failed.Kind}
	if v, ok := metricValue(b.metrics(), "skein_actor_recovery_seconds", kind); !ok || v != 1 {
		t.Errorf("skein_actor_recovery_seconds{kind=%q} count = %v, want 1", failed.Kind, v)
	}
	if v, ok := metricValue(b.metrics(), "skein_actor_failures_total", kind); !ok || v != 1 {
		t.Errorf("skein_actor_failures_total{kind=%q} = %v, want 1", failed.Kind, v)
	}
	if code, body := b.adminDo("GET", "/v1/events?since=x", ""); code != http.StatusBadRequest {
		t.Errorf("GET /v1/events?since=x: %d %s, want 400", code, body)
	}
}

// actorRole is an actor in /v1/actors, with its role.
type actorRole struct {
	Name     string       `json:"name"`
	Role     string       `json:"role"`
	Epoch    int32        `json:"epoch"`
	Restarts int64        `json:"restarts"`
	Children []*actorRole `json:"children"`
}

// actorRoles returns the broker's live actors with their roles, by name.
func (b *broker) actorRoles() map[string]actorRole {
	b.t.Helper()
	code, body := b.adminDo("GET", "/v1/actors", "")
	if code != http.StatusOK {
		b.t.Fatalf("GET /v1/actors: %d %s", code, body)
	}
	var tree struct {
		Actors []*actorRole `json:"actors"`
	}
	if err := json.Unmarshal(body, &tree); err != nil {
		b.t.Fatalf("GET /v1/actors: %v\n%s", err, body)
	}
	byName := map[string]actorRole{}
	var walk func([]*actorRole)
	walk = func(as []*actorRole) {
		for _, a := range as {
			byName[a.Name] = *a
			walk(a.Children)
		}
	}
	walk(tree.Actors)
	return byName
}
