// Package library is the extensions Skein ships, each registered as a kind
// (package extension) when the package is imported:
//
//	audit    copies records (or a sample, or headers and sizes) to an audit topic, with where each was and its producer
//	dedupe   drops records whose key or header was seen within a window of record time
//	delay    delivers each record at the time its skein-deliver-at header names, or after a delay, in order per key
//	mirror   copies topics, of this cluster or another, to prefixed topics, partition by partition, and translates groups' offsets
//	route    content-based routing and filtering by key or header to several topics
//
// Each kind's settings are in its Kind (skein extension kinds lists them).
package library
