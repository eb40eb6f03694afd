package transport

// DeleteTopics: v1-6
//
// Behaviour:
//   - With an authorizer: DELETE on each topic, TOPIC_AUTHORIZATION_FAILED
//     otherwise (with what would allow it); a topic named by id needs
//     DESCRIBE too, and one the client may not describe is refused without
//     its name.
//   - Delegated to the controller, which removes the topics from the cluster
//     metadata in one synced batch of the metadata log. The metadata actor
//     then unhosts their partitions and deletes their directories (renamed
//     out of the way at once, removed in the background), so a topic created
//     again under the same name starts empty; until then requests that reach
//     a deleted topic's partition get NOT_LEADER_OR_FOLLOWER (see hosted).
//     The answer comes once the deletion is committed.
//   - Topics by name, or (v6+) by topic id. As Kafka's controller: a name or
//     id given twice, an entry with both a name and an id, or with neither,
//     is answered INVALID_REQUEST and not deleted.
//   - An unknown name: UNKNOWN_TOPIC_OR_PARTITION; an unknown id:
//     UNKNOWN_TOPIC_ID.
//   - TimeoutMillis is not waited on: the deletion is committed before the
//     answer, or the controller did not answer within the request timeout
//     (REQUEST_TIMED_OUT, an indefinite error: the topic may be gone).
//
// Version notes: v1 throttling; v2-3 as v1 (v3: TOPIC_DELETION_DISABLED,
// never returned here); v4 flexible; v5 error messages (KIP-599); v6 topic
// ids (KIP-516).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller"
	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(20, handler{min: 1, max: 6, handle: a.handleDeleteTopics})
	})
}

// deleteEntry is one topic of a DeleteTopics request and its outcome.
type deleteEntry struct {
	name *string
	id   image.TopicID
	err  *kerr.Error
	msg  string
	slot int // index into the controller's result, -1 if not sent
}

func (a *API) handleDeleteTopics(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	var entries []deleteEntry
	if req.Version < 6 {
		for i := range req.TopicNames {
			entries = append(entries, deleteEntry{name: &req.TopicNames[i]})
		}
	} else {
		for _, t := range req.Topics {
			entries = append(entries, deleteEntry{name: t.Topic, id: image.TopicID(t.TopicID)})
		}
	}
	names, ids := map[string]int{}, map[image.TopicID]int{}
	for _, e := range entries {
		switch {
		case e.name != nil && e.id.IsZero():
			names[*e.name]++
		case e.name == nil && !e.id.IsZero():
			ids[e.id]++
		}
	}
	cmd := &controller.DeleteTopics{TimeoutMs: req.TimeoutMillis}
	z, im := c.authz(), a.Image()
	quota := c.mutations()
	wait := quota.over()
	for i := range entries {
		e := &entries[i]
		e.slot = -1
		switch {
		case e.name != nil && !e.id.IsZero():
			e.err, e.msg = kerr.InvalidRequest, "You may not specify both topic name and topic id."
		case e.name == nil && e.id.IsZero():
			e.err, e.msg = kerr.InvalidRequest, "Neither topic name nor id were specified."
		case e.name != nil && names[*e.name] > 1:
			e.err, e.msg = kerr.InvalidRequest, "Duplicate topic name."
		case e.name == nil && ids[e.id] > 1:
			e.err, e.msg = kerr.InvalidRequest, "Duplicate topic id."
		case e.name != nil && !z.may(del, topicResource, *e.name):
			e.err, e.msg = kerr.TopicAuthorizationFailed, z.denial(del, topicResource, *e.name)
		case e.name == nil && im.TopicsByID[e.id] != nil && !z.may(describe, topicResource, im.TopicsByID[e.id].Name):
			// As Kafka: an id the client may not see the name of is
			// refused without the name.
			e.err, e.msg = kerr.TopicAuthorizationFailed, "Topic authorization failed."
		case e.name == nil && im.TopicsByID[e.id] != nil && !z.may(del, topicResource, im.TopicsByID[e.id].Name):
			e.err, e.msg = kerr.TopicAuthorizationFailed, z.denial(del, topicResource, im.TopicsByID[e.id].Name)
		case wait > 0 && req.Version >= 5:
			e.err, e.msg = kerr.ThrottlingQuotaExceeded, kerr.ThrottlingQuotaExceeded.Message
		case e.name != nil:
			e.slot = len(cmd.Names)
			cmd.Names = append(cmd.Names, *e.name)
		}
	}
	// The controller answers names first, then ids.
	for i := range entries {
		if e := &entries[i]; e.err == nil && e.slot < 0 {
			e.slot = len(cmd.Names) + len(cmd.IDs)
			cmd.IDs = append(cmd.IDs, e.id)
		}
	}
	return func() kmsg.Response {
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		var res *controller.DeleteTopicsResult
		var askErr error
		if len(cmd.Names)+len(cmd.IDs) > 0 {
			var r any
			r, askErr = a.askController(cmd)
			if askErr == nil {
				res = r.(*controller.DeleteTopicsResult)
			}
		}
		for _, e := range entries {
			t := kmsg.NewDeleteTopicsResponseTopic()
			t.Topic, t.TopicID = e.name, e.id
			switch {
			case e.err != nil:
			case askErr != nil:
				e.err, e.msg = kerr.RequestTimedOut, askErr.Error()
			default:
				r := res.Topics[e.slot]
				e.err, e.msg = r.Err, r.Message
				if t.Topic == nil && r.Name != "" {
					t.Topic = kmsg.StringPtr(r.Name)
				}
				if req.Version >= 6 && t.TopicID == [16]byte{} {
					t.TopicID = r.ID
				}
			}
			if e.err != nil {
				t.ErrorCode = e.err.Code
				t.ErrorMessage = kmsg.StringPtr(e.msg)
				a.metrics.errorCode(20, req.Version, e.err.Code)
			}
			resp.Topics = append(resp.Topics, t)
		}
		// The partitions of the topics deleted count against the
		// client's controller_mutation_rate.
		partitions := 0
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 {
				continue
			}
			if t.Topic != nil && im.Topic(*t.Topic) != nil {
				partitions += len(im.Topic(*t.Topic).Partitions)
			}
		}
		resp.ThrottleMillis = int32(max(wait, quota.charge(partitions)).Milliseconds())
		return resp
	}
}
