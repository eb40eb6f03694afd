// Package skein is the module root of Skein, a Kafka-compatible log broker
// built as a tree of supervised actors. It holds no code: its tests check that
// the packages keep the layers docs/architecture.md describes (layout_test.go).
package skein
