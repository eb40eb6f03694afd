// Package image is the cluster metadata image and its records: brokers,
// topics, partitions, leaders, ISRs, epochs and configs. It is pure data with
// no actors; the controller publishes deltas and every node applies them.
package image
