package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ClientFunc returns a Kafka client acting as the user who sent r.
type ClientFunc func(r *http.Request) (*kgo.Client, error)

// requestTimeout bounds the Kafka work of one request of the API.
const requestTimeout = 5 * time.Second

// api answers /ui/api/.
type api struct {
	cfg Config
}

// admin returns the request's context, bounded by requestTimeout, and an
// admin client acting as the user who sent r; on an error it has
// answered the request.
func (a *api) admin(w http.ResponseWriter, r *http.Request) (context.Context, context.CancelFunc, *kadm.Client, bool) {
	if a.cfg.Client == nil {
		writeError(w, http.StatusServiceUnavailable, "console: this node gives its console no Kafka client")
		return nil, nil, nil, false
	}
	cl, err := a.cfg.Client(r)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return nil, nil, nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(requestTimeout / time.Millisecond))
	return ctx, cancel, adm, true
}

// fail answers err: a Kafka error by its name, with 403 for the
// authorization failures, 404 for what does not exist, 502 for the rest;
// 504 when the request's time ran out.
func fail(w http.ResponseWriter, err error) {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		status := http.StatusBadGateway
		switch ke {
		case kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.TransactionalIDAuthorizationFailed, kerr.SaslAuthenticationFailed:
			status = http.StatusForbidden
		case kerr.UnknownTopicOrPartition, kerr.GroupIDNotFound, kerr.UnknownTopicID, kerr.TransactionalIDNotFound:
			status = http.StatusNotFound
		}
		writeError(w, status, ke.Message)
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "console: the cluster did not answer in time: "+err.Error())
	default:
		writeError(w, http.StatusBadGateway, err.Error())
	}
}

// errName is the name of a Kafka error, "" for nil, the text for others.
func errName(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) // the browser may be gone; nothing to do about it
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// oneTopic is topic's detail from a listing of it, or false once w is
// answered with why there is none: the listing's error, an unknown topic
// or the topic's own error.
func oneTopic(w http.ResponseWriter, details kadm.TopicDetails, err error, topic string) (kadm.TopicDetail, bool) {
	d, ok := details[topic]
	switch {
	case err != nil:
	case !ok:
		err = kerr.UnknownTopicOrPartition
	default:
		err = d.Err
	}
	if err != nil {
		fail(w, err)
		return kadm.TopicDetail{}, false
	}
	return d, true
}

// oneGroup is group's description from kadm's answer for it, or false
// once w is answered with why there is none: the request's error, an
// unknown group (GROUP_ID_NOT_FOUND) or the group's own error, errOf.
func oneGroup[D any](w http.ResponseWriter, described map[string]D, err error, group string, errOf func(D) error) (D, bool) {
	d, ok := described[group]
	switch {
	case err != nil:
	case !ok:
		err = kerr.GroupIDNotFound
	default:
		err = errOf(d)
	}
	if err != nil {
		fail(w, err)
		var zero D
		return zero, false
	}
	return d, true
}
