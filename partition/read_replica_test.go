package partition

import (
	"testing"
	"time"

	"github.com/skeinlog/skein/controller/image"
)

// racks is an image of brokers 1-4 in racks a, b, b and c, each with a
// PLAINTEXT listener.
func racks() *image.Image {
	im := &image.Image{Brokers: map[int32]image.Broker{}}
	for id, rack := range map[int32]string{1: "a", 2: "b", 3: "b", 4: "c"} {
		im.Brokers[id] = image.Broker{ID: id, Rack: rack, Listeners: []image.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}}
	}
	return im
}

func TestPreferredReadReplica(t *testing.T) {
	t0 := time.Unix(1000, 0)
	view := func(isr []int32, fs ...FollowerLag) *View {
		return &View{State: State{Leader: 1, Replicas: []int32{1, 2, 3, 4}, ISR: isr}, Followers: fs}
	}
	f := func(r int32, offset int64, caughtUp time.Time) FollowerLag {
		return FollowerLag{Replica: r, FetchOffset: offset, CaughtUp: caughtUp}
	}
	all := []int32{1, 2, 3, 4}
	for _, tc := range []struct {
		name        string
		change      func(*image.Image)
		v           *View
		rack        string
		listener    string
		fetchOffset int64
		want        int32
	}{
		{"no rack", nil, view(all, f(2, 10, t0), f(3, 10, t0), f(4, 10, t0)), "", "PLAINTEXT", 5, -1},
		{"the leader's rack", nil, view(all, f(2, 10, t0), f(3, 10, t0), f(4, 10, t0)), "a", "PLAINTEXT", 5, -1},
		{"a rack with no replica", nil, view(all, f(2, 10, t0), f(3, 10, t0), f(4, 10, t0)), "d", "PLAINTEXT", 5, -1},
		{"the one in the rack", nil, view(all, f(2, 10, t0), f(3, 10, t0), f(4, 10, t0)), "c", "PLAINTEXT", 5, 4},
		{"the furthest ahead", nil, view(all, f(2, 10, t0), f(3, 12, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 3},
		{"then the last caught up", nil, view(all, f(2, 10, t0.Add(time.Second)), f(3, 10, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 2},
		{"then the lowest id", nil, view(all, f(2, 10, t0), f(3, 10, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 2},
		{"not in the ISR", nil, view([]int32{1, 3, 4}, f(2, 20, t0), f(3, 10, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 3},
		{"none in the ISR", nil, view([]int32{1, 4}, f(2, 20, t0), f(3, 10, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, -1},
		{"behind the fetch offset", nil, view(all, f(2, 4, t0), f(3, 10, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 3},
		{"at the fetch offset", nil, view(all, f(2, 5, t0), f(3, 4, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 2},
		{"no fetch yet", nil, view(all, f(2, -1, t0), f(3, -1, t0), f(4, 10, t0)), "b", "PLAINTEXT", 0, -1},
		{"fenced", func(im *image.Image) { b := im.Brokers[3]; b.Fenced = true; im.Brokers[3] = b },
			view(all, f(2, 10, t0), f(3, 12, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 2},
		{"unregistered", func(im *image.Image) { delete(im.Brokers, 4) },
			view(all, f(2, 10, t0), f(3, 12, t0), f(4, 10, t0)), "c", "PLAINTEXT", 5, -1},
		{"no endpoint on the listener", func(im *image.Image) {
			b := im.Brokers[3]
			b.Listeners = []image.Endpoint{{Name: "SSL", Host: "h", Port: 9093}}
			im.Brokers[3] = b
		}, view(all, f(2, 10, t0), f(3, 12, t0), f(4, 10, t0)), "b", "PLAINTEXT", 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im := racks()
			if tc.change != nil {
				tc.change(im)
			}
			if got := PreferredReadReplica(im, tc.v, 1, tc.rack, tc.listener, tc.fetchOffset); got != tc.want {
				t.Fatalf("PreferredReadReplica = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestFollowerInSync(t *testing.T) {
	t0 := time.Unix(1000, 0)
	lag := 30 * time.Second
	for _, tc := range []struct {
		name     string
		isr      []int32
		caughtUp time.Time
		now      time.Time
		want     bool
	}{
		{"caught up just now", []int32{1, 2}, t0, t0, true},
		{"caught up lagMax ago", []int32{1, 2}, t0, t0.Add(lag), true},
		{"not since", []int32{1, 2}, t0, t0.Add(lag + time.Millisecond), false},
		{"never", []int32{1, 2}, time.Time{}, t0, false},
		{"out of the ISR", []int32{1}, t0, t0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &View{State: State{Leader: 1, ISR: tc.isr}}
			if got := FollowerInSync(v, tc.caughtUp, 2, tc.now, lag); got != tc.want {
				t.Fatalf("FollowerInSync = %v, want %v", got, tc.want)
			}
		})
	}
}
