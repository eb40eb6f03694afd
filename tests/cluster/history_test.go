package cluster

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCheckHistory checks the checker of TestActiveControllerKilledFiveTimes
// on histories made up for it: with no cluster, each violation it must
// find, and each outcome it must allow.
func TestCheckHistory(t *testing.T) {
	idA, idB := [16]byte{1}, [16]byte{2}
	create := func(seq int, o outcome, id [16]byte) op {
		return op{seq: seq, kind: opCreate, topic: "t", outcome: o, id: id}
	}
	del := func(seq int, o outcome) op { return op{seq: seq, kind: opDelete, topic: "t", outcome: o} }
	exists := func(id [16]byte) map[string]topicView {
		return map[string]topicView{"t": {id: id, leaders: []int32{1, 2, 3}}}
	}
	absent := map[string]topicView{}
	for _, tc := range []struct {
		name    string
		history []op
		final   map[string]topicView
		bad     bool
	}{
		{"created", []op{create(0, outcomeOK, idA)}, exists(idA), false},
		{"created, missing", []op{create(0, outcomeOK, idA)}, absent, true},
		{"created, another id", []op{create(0, outcomeOK, idA)}, exists(idB), true},
		{"created after a retry", []op{create(0, outcomeApplied, [16]byte{})}, exists(idB), false},
		{"created after a retry, missing", []op{create(0, outcomeApplied, [16]byte{})}, absent, true},
		{"create unknown, there", []op{create(0, outcomeUnknown, [16]byte{})}, exists(idB), false},
		{"create unknown, missing", []op{create(0, outcomeUnknown, [16]byte{})}, absent, false},
		{"create failed, there", []op{create(0, outcomeFailed, [16]byte{})}, exists(idA), true},
		{"never created", nil, exists(idA), true},
		{"internal", nil, map[string]topicView{"t": {internal: true}}, false},
		{"deleted", []op{create(0, outcomeOK, idA), del(1, outcomeOK)}, absent, false},
		{"deleted, there", []op{create(0, outcomeOK, idA), del(1, outcomeOK)}, exists(idA), true},
		{"deleted after a retry, there", []op{create(0, outcomeOK, idA), del(1, outcomeApplied)}, exists(idA), true},
		{"delete unknown, there", []op{create(0, outcomeOK, idA), del(1, outcomeUnknown)}, exists(idA), false},
		{"delete unknown, missing", []op{create(0, outcomeOK, idA), del(1, outcomeUnknown)}, absent, false},
		{"created again", []op{create(0, outcomeOK, idA), del(1, outcomeOK), create(2, outcomeOK, idB)}, exists(idB), false},
		{"created again, old id", []op{create(0, outcomeOK, idA), del(1, outcomeOK), create(2, outcomeOK, idB)}, exists(idA), true},
		{"created again, missing", []op{create(0, outcomeOK, idA), del(1, outcomeOK), create(2, outcomeOK, idB)}, absent, true},
		{"created again, unknown", []op{create(0, outcomeOK, idA), del(1, outcomeOK), create(2, outcomeUnknown, [16]byte{})}, exists(idB), false},
		// An unknown create may be committed late, after a later delete.
		{"late create", []op{create(0, outcomeUnknown, [16]byte{}), del(1, outcomeApplied)}, exists(idA), false},
		{"a failed delete", []op{create(0, outcomeOK, idA), del(1, outcomeFailed)}, exists(idA), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := checkHistory(tc.history, tc.final)
			if tc.bad != (len(v) > 0) {
				t.Errorf("violations: %q, want some: %v", v, tc.bad)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		reqErr, topicErr error
		retried          bool
		want             outcome
	}{
		{nil, nil, false, outcomeOK},
		{nil, nil, true, outcomeOK},
		{errors.New("context deadline exceeded"), nil, true, outcomeUnknown},
		{nil, kerr.TopicAlreadyExists, true, outcomeApplied},
		{nil, kerr.TopicAlreadyExists, false, outcomeFailed},
		{nil, kerr.RequestTimedOut, false, outcomeUnknown},
		{nil, kerr.NotController, true, outcomeUnknown},
		{nil, kerr.UnknownServerError, false, outcomeUnknown},
		{nil, kerr.InvalidReplicationFactor, false, outcomeFailed},
	} {
		if got, _ := classify(tc.reqErr, tc.topicErr, kerr.TopicAlreadyExists, tc.retried); got != tc.want {
			t.Errorf("classify(%v, %v, retried %v) = %v, want %v", tc.reqErr, tc.topicErr, tc.retried, got, tc.want)
		}
	}
	retries := []string{"request=Metadata tries=1 request_error=EOF", "request=CreateTopics tries=1 request_error=EOF"}
	if !retried(retries, kmsg.CreateTopics) || retried(retries, kmsg.DeleteTopics) {
		t.Errorf("retried(%q): want CreateTopics only", retries)
	}
}
