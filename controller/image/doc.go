// Package image is the cluster metadata image and its records: brokers,
// topics, partitions, leaders, ISRs, epochs, configs and extension
// instances. It is pure data with no actors; the controller publishes
// deltas and every node applies them.
package image
