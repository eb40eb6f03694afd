// Package upper is an example extension kind, registered in its init
// function as a kind of its own module would be: "upper" copies the records
// of its source topics to its target topic with their values in upper case.
package upper

import (
	"bytes"

	"github.com/skeinlog/skein/extension"
)

func init() {
	extension.Register(extension.Kind{
		Name: "upper",
		Doc:  "copies records to the target topic with their values in upper case",
		Settings: []extension.Setting{
			{Name: "target", Required: true, Doc: "the topic to write to"},
		},
		// An instance does not read what it writes, even when its
		// source.topics matches the target.
		Skip: func(settings map[string]string, topic string) bool { return topic == settings["target"] },
		New: func(in extension.Instance) (extension.Extension, error) {
			return upper{target: in.Settings["target"]}, nil
		},
	})
}

// upper is the Extension of one source partition.
type upper struct{ target string }

// Process emits each record with its value upper-cased, to the partition
// of the target its key hashes to. It is deterministic, so the runtime
// writes its output exactly once.
func (u upper) Process(records []extension.Record, out extension.Output) error {
	for _, r := range records {
		r.Value = bytes.ToUpper(r.Value)
		out.Emit(u.target, -1, r)
	}
	return nil
}
