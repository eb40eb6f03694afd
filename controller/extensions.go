package controller

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Extension instances are cluster metadata: the controller keeps their
// definitions (name, kind, settings as given) and every node's runtime
// reads them from its image. The controller does not know the kinds,
// which are compiled into the binaries: the node that takes a request
// checks the kind and settings (package extension) before it asks.

// ValidateExtensionName applies the topic name rules to an extension
// instance's name (its actor, extensions/<name>, and what it writes are
// named after it) and returns why name is illegal, or "" if it is legal.
func ValidateExtensionName(name string) string { return validateName("Extension", name) }

func (*AlterExtensions) kind() commandKind { return kindAlterExtensions }
func (m *AlterExtensions) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (*AlterExtensions) newResult() any { return &AlterExtensionsResult{} }
func (*AlterExtensions) failed(err *kerr.Error, msg string) any {
	return &AlterExtensionsResult{Err: err, Message: msg}
}

func (m *AlterExtensions) decide(c *Controller) (any, []image.Record) {
	refuse := func(err *kerr.Error, format string, args ...any) (any, []image.Record) {
		return &AlterExtensionsResult{Err: err, Message: fmt.Sprintf(format, args...)}, nil
	}
	switch {
	case (m.Set == nil) == (m.Delete == ""):
		return refuse(kerr.InvalidRequest, "give one extension to set or one to delete")
	case m.Delete != "":
		if _, ok := c.head.Extensions[m.Delete]; !ok {
			return refuse(kerr.ResourceNotFound, "no extension %q", m.Delete)
		}
		return &AlterExtensionsResult{}, []image.Record{&image.DeleteExtension{Name: m.Delete}}
	}
	e := m.Set
	if msg := ValidateExtensionName(e.Name); msg != "" {
		return refuse(kerr.InvalidRequest, "%s", msg)
	}
	if e.Kind == "" {
		return refuse(kerr.InvalidRequest, "extension %q names no kind", e.Name)
	}
	if cur, ok := c.head.Extensions[e.Name]; ok {
		switch {
		case !m.Replace:
			// NB: Kafka has no general "already exists" code
			// (TOPIC_ALREADY_EXISTS names topics); DUPLICATE_RESOURCE is
			// the nearest, and a code of its own lets the admin API
			// answer 409 even when another node created the name between
			// its own check and this decision.
			return refuse(kerr.DuplicateResource, "extension %q exists", e.Name)
		case cur.Equal(e):
			return &AlterExtensionsResult{}, nil
		}
	}
	return &AlterExtensionsResult{}, []image.Record{&image.SetExtension{Extension: *e}}
}
