package coordinator

import (
	"slices"
	"testing"

	"github.com/skeinlog/skein/controller/image"
)

// TestRegexNamesIncludeInternalTopics: a KIP-848 regular expression may
// name an internal topic, as Kafka's broker-side resolution allows.
func TestRegexNamesIncludeInternalTopics(t *testing.T) {
	im := image.Empty()
	var err error
	for i, tp := range []*image.CreateTopic{
		{Name: OffsetsTopic, ID: image.TopicID{1}, Partitions: []image.Partition{{Index: 0}}, Internal: true},
		{Name: "orders", ID: image.TopicID{2}, Partitions: []image.Partition{{Index: 0}}},
	} {
		if im, err = im.Apply(int64(i), tp); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := ImageTopics(im).Names()
	if want := []string{OffsetsTopic, "orders"}; !slices.Equal(names, want) {
		t.Fatalf("names %v, want %v", names, want)
	}
	g := &consumerGroup{regexes: map[string]resolvedRegex{}}
	if got := g.resolve(`__consumer_offsets`, ImageTopics(im)); !slices.Equal(got, []string{OffsetsTopic}) {
		t.Fatalf("regex __consumer_offsets resolved to %v", got)
	}
}
