package cli

// -o/--output on the commands that list and describe: text for people (the
// tables), json and yaml for scripts. A command builds one value of its
// answer and hands it to output.write with the function that prints the
// text; json and yaml print the value, the two with the same keys (the
// value's json tags).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"go.yaml.in/yaml/v3"
)

// output is the value of a command's -o flag.
type output string

const (
	outputText output = "text"
	outputJSON output = "json"
	outputYAML output = "yaml"
)

func (o *output) String() string { return string(*o) }
func (o *output) Type() string   { return "text|json|yaml" }

// Set refuses an unknown format as a flag error, so that the command line's
// mistake is exit code 2 before anything is asked of a broker.
func (o *output) Set(s string) error {
	switch output(s) {
	case outputText, outputJSON, outputYAML:
		*o = output(s)
		return nil
	}
	return fmt.Errorf("unknown output format %q: text, json or yaml", s)
}

// addOutputFlag adds -o/--output to cmd, text by default.
func addOutputFlag(cmd *cobra.Command) *output {
	o := outputText
	cmd.Flags().VarP(&o, "output", "o", "print as text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", completeValues(string(outputText), string(outputJSON), string(outputYAML)))
	return &o
}

// write prints v as json or yaml, or calls text for the text format.
func (o output) write(w io.Writer, v any, text func() error) error {
	switch o {
	case outputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case outputYAML:
		// Through JSON, so that yaml's keys are the json tags and a type's
		// MarshalJSON holds for both.
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		var generic any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if err := dec.Decode(&generic); err != nil {
			return err
		}
		out, err := yaml.Marshal(numbersAsYAML(generic))
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return text()
}

// numbersAsYAML turns json.Numbers back into integers or floats, which yaml
// prints as numbers (a json.Number is a string to it).
func numbersAsYAML(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = numbersAsYAML(e)
		}
	case []any:
		for i, e := range v {
			v[i] = numbersAsYAML(e)
		}
	}
	return v
}

// topicPartitions is a topic's partitions in the json and yaml of the
// commands that list them.
type topicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// topicPartitionsOf lists the topics of s that have partitions, sorted.
func topicPartitionsOf(s kadm.TopicsSet) []topicPartitions {
	out := []topicPartitions{}
	for _, t := range s.Sorted() {
		if len(t.Partitions) > 0 {
			out = append(out, topicPartitions{t.Topic, t.Partitions})
		}
	}
	return out
}

// topicPartitionsText prints tps as topicsSet does: topic[0,1] other[2],
// or "-" when there are none.
func topicPartitionsText(tps []topicPartitions) string {
	parts := make([]string, 0, len(tps))
	for _, t := range tps {
		parts = append(parts, t.Topic+int32List(t.Partitions))
	}
	return orDash(strings.Join(parts, " "))
}
