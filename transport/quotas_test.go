package transport

import (
	"testing"
	"time"

	"github.com/skeinlog/skein/controller/image"
)

// A client past its quota waits until its bucket is back at zero: it
// holds the quota for quota.window.num windows, and fills at the quota.
func TestQuotaThrottle(t *testing.T) {
	q := newQuotas(2, time.Second) // a bucket of 2 s of the quota
	sk := sensorKey{key: quotaProduce, client: "c"}
	now := time.Unix(1000, 0)
	if d := q.charge(sk, 100, 150, now); d != 0 {
		t.Fatalf("within the burst: throttled %v", d)
	}
	// 50 left, 50 more half a second later (full is 200): 300 takes it to
	// -200, two seconds of the quota.
	if d := q.charge(sk, 100, 300, now.Add(500*time.Millisecond)); d != 2*time.Second {
		t.Fatalf("past quota: throttled %v, want 2s", d)
	}
	if d := q.over(sk, 100, now.Add(1500*time.Millisecond)); d != time.Second {
		t.Fatalf("a second later: over for %v, want 1s", d)
	}
	if d := q.charge(sk, 100, 10, now.Add(5*time.Second)); d != 0 {
		t.Fatalf("once it refilled: throttled %v", d)
	}
}

// A client that produces as fast as it is let is held to its quota, once
// its burst is spent, whatever the size of its requests.
func TestQuotaSteadyRate(t *testing.T) {
	for _, size := range []float64{1000, 131072, 1 << 20} {
		q := newQuotas(11, time.Second)
		sk := sensorKey{key: quotaProduce}
		const quota = 524288.0
		start := time.Unix(1000, 0)
		now, sent := start, 0.0
		var from time.Time
		for now.Sub(start) < 60*time.Second {
			if from.IsZero() && now.Sub(start) >= 20*time.Second {
				from, sent = now, 0
			}
			d := q.charge(sk, quota, size, now)
			sent += size
			now = now.Add(d + time.Millisecond)
		}
		if r := sent / now.Sub(from).Seconds() / quota; r < 0.98 || r > 1.02 {
			t.Errorf("requests of %.0f bytes: %.3f of the quota", size, r)
		}
	}
}

// Kafka's precedence of quota entities.
func TestQuotaResolution(t *testing.T) {
	im := image.Empty()
	set := func(e image.QuotaEntity, v float64) { im.ClientQuotas[e] = map[string]float64{quotaProduce: v} }
	set(image.QuotaEntity{ClientID: image.DefaultName}, 8)
	set(image.QuotaEntity{ClientID: image.Named("app")}, 7)
	set(image.QuotaEntity{User: image.DefaultName}, 6)
	set(image.QuotaEntity{User: image.Named("alice")}, 3)
	set(image.QuotaEntity{User: image.Named("alice"), ClientID: image.Named("app")}, 1)
	for _, tc := range []struct {
		user, client string
		want         float64
		sensor       sensorKey
	}{
		{"alice", "app", 1, sensorKey{quotaProduce, "alice", "app"}},
		{"alice", "other", 3, sensorKey{quotaProduce, "alice", ""}},
		{"bob", "app", 6, sensorKey{quotaProduce, "bob", ""}},
	} {
		v, sk, ok := resolve(im, quotaProduce, tc.user, tc.client)
		if !ok || v != tc.want || sk != tc.sensor {
			t.Errorf("%s/%s: %v %+v %v, want %v %+v", tc.user, tc.client, v, sk, ok, tc.want, tc.sensor)
		}
	}
	delete(im.ClientQuotas, image.QuotaEntity{User: image.DefaultName})
	if v, sk, _ := resolve(im, quotaProduce, "bob", "app"); v != 7 || sk != (sensorKey{quotaProduce, "", "app"}) {
		t.Errorf("bob/app without a default user: %v %+v, want the client id's 7", v, sk)
	}
}
