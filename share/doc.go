// Package share serves Kafka's share groups (KIP-932) on the partition
// side: the share coordinator, which keeps each share-partition's durable
// state in __share_group_state, and the share-partition actors, which hand
// a partition's records to a share group's consumers one lease at a time.
package share
