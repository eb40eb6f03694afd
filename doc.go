// Package skein is the module root of Skein, a Kafka-compatible log broker
// built as a tree of supervised actors. It holds no code: its tests check that
// the package layout keeps the layering rules of DESIGN.md (see layout_test.go).
package skein
