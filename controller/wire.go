package controller

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/skeinlog/skein/actors"
	"github.com/skeinlog/skein/controller/image"
)

// Messages between controllers, over remoting. Their ids are stable
// forever (actors.Register).
func init() {
	actors.Register[RaftMessage](100)
	actors.Register[Forward](101)
	actors.Register[ForwardAnswer](102)
}

// RaftMessage is one raft message from the controller of Origin: the
// raftpb.Message's protobuf encoding rides in the frame's raw bytes, or
// one part of it, for a message over chunkBytes (a snapshot; chunks.go).
// Cluster is the sender's cluster id, empty before it knows one: a member
// drops messages of another cluster, so that a node started on another
// cluster's data directory cannot win an election with that log.
type RaftMessage struct {
	Origin  actors.Origin `msgpack:"origin"`
	Cluster string        `msgpack:"cluster"`
	// A message in Parts > 1 parts: its number among the sender's, and
	// which part this is.
	Seq   uint64 `msgpack:"seq,omitempty"`
	Part  int    `msgpack:"part,omitempty"`
	Parts int    `msgpack:"parts,omitempty"`
	Data  []byte `msgpack:"-"`
}

func (m *RaftMessage) Serialize() (actors.Serialized, error) { return actors.Encode(m) }
func (m *RaftMessage) Raw() []byte                           { return m.Data }
func (m *RaftMessage) SetRaw(b []byte)                       { m.Data = b }

// Forward carries a command to the active controller, which decides it
// at most once per Request however often it arrives. Sent with the
// sender's PID, which gets a ForwardAnswer for a command that commits
// nothing; one that commits is answered by the origin's own controller
// when it applies the entry.
type Forward struct {
	Origin  actors.Origin `msgpack:"origin"`
	Request RequestID     `msgpack:"req"`
	Kind    commandKind   `msgpack:"kind"`
	Command []byte        `msgpack:"cmd"`
}

func (m *Forward) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// ForwardAnswer is the result of a forwarded command, msgpack-encoded,
// which the origin answers once it has applied the entries up to After
// (what the command was decided against).
type ForwardAnswer struct {
	Request RequestID `msgpack:"req"`
	Result  []byte    `msgpack:"res"`
	After   uint64    `msgpack:"after"`
}

func (m *ForwardAnswer) Serialize() (actors.Serialized, error) { return actors.Encode(m) }

// RequestID names one command across its forwards and retries: the node
// and incarnation that took it and a sequence number of theirs.
type RequestID struct {
	Node        int32  `msgpack:"node"`
	Incarnation uint64 `msgpack:"inc"`
	Seq         uint64 `msgpack:"seq"`
}

// An entry of the quorum's log is one decided command: its records and
// its result, so that every controller can answer a retry of the same
// request without deciding it again.
type entry struct {
	Request RequestID       `msgpack:"req"`
	Kind    commandKind     `msgpack:"kind"`
	Records []encodedRecord `msgpack:"recs"`
	Result  []byte          `msgpack:"res"`
}

// encodedRecord is an image.Record with its type id.
type encodedRecord struct {
	Type image.RecordType `msgpack:"t"`
	Body []byte           `msgpack:"b"`
}

func encodeRecords(records []image.Record) ([]encodedRecord, error) {
	out := make([]encodedRecord, len(records))
	for i, r := range records {
		b, err := msgpack.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("controller: encode %T: %w", r, err)
		}
		out[i] = encodedRecord{Type: r.Type(), Body: b}
	}
	return out, nil
}

func decodeRecords(in []encodedRecord) ([]image.Record, error) {
	out := make([]image.Record, len(in))
	for i, er := range in {
		r, err := decodeRecord(er.Type, er.Body)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// snapshotData is a snapshot of the controller's state machine: the
// image, as the records that rebuild it, and the recent answers.
type snapshotData struct {
	Offset   int64           `msgpack:"off"`
	Records  []encodedRecord `msgpack:"recs"`
	Answered []answer        `msgpack:"answered"`
}

func encodeSnapshot(im *image.Image, answered []answer) ([]byte, error) {
	recs, err := encodeRecords(im.Records())
	if err != nil {
		return nil, err
	}
	return msgpack.Marshal(&snapshotData{Offset: im.Offset, Records: recs, Answered: answered})
}

func decodeSnapshot(b []byte) (*image.Image, []answer, error) {
	var s snapshotData
	if err := msgpack.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("controller: decode snapshot: %w", err)
	}
	recs, err := decodeRecords(s.Records)
	if err != nil {
		return nil, nil, err
	}
	im := image.Empty()
	for _, r := range recs {
		if im, err = im.Apply(s.Offset, r); err != nil {
			return nil, nil, fmt.Errorf("controller: snapshot: %w", err)
		}
	}
	im.Offset = s.Offset
	return im, s.Answered, nil
}
