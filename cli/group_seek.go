package cli

// skein group seek's plan: the offsets it would set, printed without
// --execute (a dry run, as kafka-consumer-groups --reset-offsets without
// --execute) and set with it.

import (
	"fmt"
	"io"
	"strconv"
)

// seekPlan is a group seek's answer: each partition's offset before and
// after. Executed is false for a dry run, which changed nothing.
type seekPlan struct {
	Group      string          `json:"group"`
	Type       string          `json:"type"` // "consumer" (classic or consumer group) or "share"
	Executed   bool            `json:"executed"`
	Partitions []seekPartition `json:"partitions"`
}

// seekPartition is one partition of a seek: its committed offset (a share
// group's start offset) before, -1 for none, and the new one.
type seekPartition struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	CurrentOffset int64  `json:"current_offset"`
	NewOffset     int64  `json:"new_offset"`
	Error         string `json:"error,omitempty"`
}

// seekOptions are group seek's --execute and -o.
type seekOptions struct {
	execute bool
	out     output
}

// write prints the plan: a table of the partitions, and for a dry run a
// line saying nothing changed.
func (p seekPlan) write(w io.Writer, out output) error {
	if p.Partitions == nil {
		p.Partitions = []seekPartition{}
	}
	return out.write(w, p, func() error {
		rows := [][]string{{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "ERROR"}}
		for _, s := range p.Partitions {
			current := "-"
			if s.CurrentOffset >= 0 {
				current = strconv.FormatInt(s.CurrentOffset, 10)
			}
			rows = append(rows, []string{p.Group, s.Topic, strconv.Itoa(int(s.Partition)), current, strconv.FormatInt(s.NewOffset, 10), s.Error})
		}
		if err := printTable(w, dropEmptyLastColumn(rows)); err != nil {
			return err
		}
		if !p.Executed {
			_, err := fmt.Fprintln(w, "dry run: nothing was changed; --execute sets these offsets")
			return err
		}
		return nil
	})
}
