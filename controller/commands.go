package controller

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/controller/image"
)

// A command is what the active controller decides: against the image it
// decides on (Controller.head), it returns its result and the records to
// commit (none when it changes nothing: refused, or validate-only).
// Commands travel between controllers (forwarding), so each has a stable
// kind and is plain data.
type command interface {
	kind() commandKind
	// timeout is the command's own bound on its wait, 0 for none.
	timeout() time.Duration
	decide(c *Controller) (result any, records []image.Record)
	// failed returns the result of a command that was not decided: every
	// item gets err and msg.
	failed(err *kerr.Error, msg string) any
	// newResult returns an empty result, to decode one into.
	newResult() any
}

// commandKind identifies a command in forwards and log entries. Never
// renumber; add at the end.
type commandKind uint8

const (
	kindCreateTopics commandKind = iota + 1
	kindDeleteTopics
	kindCreatePartitions
	kindAlterConfigs
	kindAllocateProducerIDs
	kindRegisterBroker
	kindBootCluster
	kindFenceBroker
	kindAlterPartition
	kindElectLeaders
	kindAlterReassignments
	kindAlterExtensions
	kindAlterScramCredentials
	kindCreateACLs
	kindDeleteACLs
	kindAlterClientQuotas
	kindUpdateFeatures
	kindUnregisterBroker
)

func newCommand(k commandKind) command {
	switch k {
	case kindCreateTopics:
		return &CreateTopics{}
	case kindDeleteTopics:
		return &DeleteTopics{}
	case kindCreatePartitions:
		return &CreatePartitions{}
	case kindAlterConfigs:
		return &AlterConfigs{}
	case kindAllocateProducerIDs:
		return &AllocateProducerIDs{}
	case kindRegisterBroker:
		return &registerBroker{}
	case kindBootCluster:
		return &bootCluster{}
	case kindFenceBroker:
		return &fenceBroker{}
	case kindAlterPartition:
		return &AlterPartition{}
	case kindElectLeaders:
		return &ElectLeaders{}
	case kindAlterReassignments:
		return &AlterReassignments{}
	case kindAlterExtensions:
		return &AlterExtensions{}
	case kindAlterScramCredentials:
		return &AlterScramCredentials{}
	case kindCreateACLs:
		return &CreateACLs{}
	case kindDeleteACLs:
		return &DeleteACLs{}
	case kindAlterClientQuotas:
		return &AlterClientQuotas{}
	case kindUpdateFeatures:
		return &UpdateFeatures{}
	case kindUnregisterBroker:
		return &UnregisterBroker{}
	}
	return nil
}

func decodeCommand(k commandKind, body []byte) (command, error) {
	cmd := newCommand(k)
	if cmd == nil {
		return nil, fmt.Errorf("controller: unknown command kind %d (sent by a newer Skein?)", k)
	}
	if err := msgpack.Unmarshal(body, cmd); err != nil {
		return nil, fmt.Errorf("controller: decode command kind %d: %w", k, err)
	}
	return cmd, nil
}

func (*CreateTopics) kind() commandKind { return kindCreateTopics }
func (m *CreateTopics) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (m *CreateTopics) decide(c *Controller) (any, []image.Record) {
	return c.createTopics(m)
}
func (m *CreateTopics) failed(err *kerr.Error, msg string) any {
	res := &CreateTopicsResult{}
	for _, t := range m.Topics {
		res.Topics = append(res.Topics, TopicResult{Name: t.Name, Err: err, Message: msg})
	}
	return res
}
func (*CreateTopics) newResult() any { return &CreateTopicsResult{} }

func (*DeleteTopics) kind() commandKind { return kindDeleteTopics }
func (m *DeleteTopics) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (m *DeleteTopics) decide(c *Controller) (any, []image.Record) {
	return c.deleteTopics(m)
}
func (m *DeleteTopics) failed(err *kerr.Error, msg string) any {
	res := &DeleteTopicsResult{}
	for _, n := range m.Names {
		res.Topics = append(res.Topics, TopicResult{Name: n, Err: err, Message: msg})
	}
	for _, id := range m.IDs {
		res.Topics = append(res.Topics, TopicResult{ID: id, Err: err, Message: msg})
	}
	return res
}
func (*DeleteTopics) newResult() any { return &DeleteTopicsResult{} }

func (*CreatePartitions) kind() commandKind { return kindCreatePartitions }
func (m *CreatePartitions) timeout() time.Duration {
	return time.Duration(m.TimeoutMs) * time.Millisecond
}
func (m *CreatePartitions) decide(c *Controller) (any, []image.Record) {
	return c.createPartitions(m)
}
func (m *CreatePartitions) failed(err *kerr.Error, msg string) any {
	res := &CreatePartitionsResult{}
	for _, t := range m.Topics {
		res.Topics = append(res.Topics, TopicResult{Name: t.Name, Err: err, Message: msg})
	}
	return res
}
func (*CreatePartitions) newResult() any { return &CreatePartitionsResult{} }

func (*AlterConfigs) kind() commandKind      { return kindAlterConfigs }
func (*AlterConfigs) timeout() time.Duration { return 0 }
func (m *AlterConfigs) decide(c *Controller) (any, []image.Record) {
	return c.alterConfigs(m)
}
func (m *AlterConfigs) failed(err *kerr.Error, msg string) any {
	res := &AlterConfigsResult{}
	for _, r := range m.Resources {
		res.Resources = append(res.Resources, ConfigResult{Type: r.Type, Name: r.Name, Err: err, Message: msg})
	}
	return res
}
func (*AlterConfigs) newResult() any { return &AlterConfigsResult{} }

func (*AllocateProducerIDs) kind() commandKind      { return kindAllocateProducerIDs }
func (*AllocateProducerIDs) timeout() time.Duration { return 0 }
func (*AllocateProducerIDs) decide(c *Controller) (any, []image.Record) {
	first := c.head.NextProducerID
	return &AllocateProducerIDsResult{First: first, Size: ProducerIDBlockSize},
		[]image.Record{&image.AllocateProducerIDs{First: first, Size: ProducerIDBlockSize}}
}
func (*AllocateProducerIDs) failed(err *kerr.Error, msg string) any {
	return &AllocateProducerIDsResult{Err: err, Message: msg}
}
func (*AllocateProducerIDs) newResult() any { return &AllocateProducerIDsResult{} }

// bootCluster names a new cluster: the first active controller of a
// quorum whose log holds no cluster id decides it.
type bootCluster struct {
	ClusterID string `msgpack:"id"`
	// Scram are the credentials the cluster starts with
	// (scram.bootstrap.users), derived by the controller that boots it.
	Scram []image.SetScram `msgpack:"scram,omitempty"`
}

// commandDone answers the internal commands, which have nobody waiting
// but the controller itself.
type commandDone struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

func (*bootCluster) kind() commandKind      { return kindBootCluster }
func (*bootCluster) timeout() time.Duration { return 0 }
func (m *bootCluster) decide(c *Controller) (any, []image.Record) {
	if c.head.ClusterID != "" {
		return &commandDone{}, nil
	}
	records := []image.Record{&image.Cluster{ClusterID: m.ClusterID}}
	for i := range m.Scram {
		records = append(records, &m.Scram[i])
	}
	// The feature levels the cluster starts at, written so that a later
	// Skein with other defaults changes none of them.
	for _, f := range bootstrapFeatures() {
		records = append(records, &f)
	}
	return &commandDone{}, records
}
func (*bootCluster) failed(err *kerr.Error, msg string) any {
	return &commandDone{Err: err, Message: msg}
}
func (*bootCluster) newResult() any { return &commandDone{} }
