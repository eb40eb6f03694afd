package transport

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skeinlog/skein/controller/image"
)

// TestTopicMetricsCountWithoutAllocating: once a topic's counters are
// made, counting a produced Append or a served fetch allocates nothing.
func TestTopicMetricsCountWithoutAllocating(t *testing.T) {
	m := NewMetrics(nil)
	m.topic("orders") // made once
	allocs := testing.AllocsPerRun(1000, func() {
		c := m.topic("orders")
		c.Appended(16, 16<<10)
		c.served(16, 16<<10)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per count, want 0", allocs)
	}
}

// TestTopicMetricsPruned: a scrape drops the series of the topics the
// image no longer has, and a topic created again under the same name
// counts from zero.
func TestTopicMetricsPruned(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	im := &image.Image{Topics: map[string]*image.Topic{"kept": {Name: "kept"}, "deleted": {Name: "deleted"}}}
	imageFn := func() *image.Image { return im }
	m.topics.image.Store(&imageFn)
	m.topic("kept").Appended(3, 300)
	m.topic("deleted").Appended(5, 500)
	m.topic("deleted").served(2, 200)
	if got := counterValue(t, m.topics.recordsIn.WithLabelValues("deleted")); got != 5 {
		t.Fatalf("records in of deleted = %v, want 5", got)
	}

	im = &image.Image{Topics: map[string]*image.Topic{"kept": {Name: "kept"}}}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() != "kept" {
					t.Errorf("%s{topic=%q} after the deletion", mf.GetName(), l.GetValue())
				}
			}
		}
	}
	if got := counterValue(t, m.topics.recordsIn.WithLabelValues("kept")); got != 3 {
		t.Fatalf("records in of kept = %v, want 3", got)
	}
	im = &image.Image{Topics: map[string]*image.Topic{"kept": {Name: "kept"}, "deleted": {Name: "deleted"}}}
	m.topic("deleted").Appended(1, 100)
	if got := counterValue(t, m.topics.recordsIn.WithLabelValues("deleted")); got != 1 {
		t.Fatalf("records in of deleted, created again = %v, want 1", got)
	}
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
