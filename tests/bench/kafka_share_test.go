//go:build kafkadiff

package main

import "testing"

// TestKafkaShareSmoke runs the share group benchmark's kafka target (Apache
// Kafka from tests/kafkaref) beside skein-fsync, as TestShareSmoke runs the
// Skein targets.
func TestKafkaShareSmoke(t *testing.T) {
	skeinBin, _ := binaries(t)
	shareSmoke(t, skeinTarget(skeinBin, "fsync", 0), kafkaTarget(kafkaClasspath(t)))
}
