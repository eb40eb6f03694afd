// Package image is the cluster metadata image and its records: brokers,
// topics, partitions, leaders, ISRs, epochs, configs and extension
// instances. It is pure data with no actors. The records are what the
// controller writes to the metadata log; every node's controller (a voter
// or an observer) applies the committed ones in log order (Image.Apply)
// and publishes each new Image, which never changes once made, so readers
// hold one without locks. Records (snapshot.go) turns an image back into
// the records that rebuild it, the content of a metadata snapshot.
package image
