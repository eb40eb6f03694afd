// Package library is the extensions Skein ships, each registered as a kind
// (package extension) when the package is imported:
//
//	mirror   copies topics to prefixed topics, partition by partition
//	route    content-based routing and filtering by key or header to several topics
//
// Each kind's settings are in its Kind (skein extension kinds lists them).
package library
