package transport

// SaslHandshake: v1
//
// Behaviour:
//   - On a SASL listener, before authentication: the client names its
//     mechanism; one the listener offers starts a session, which
//     SaslAuthenticate carries on. Any other is UNSUPPORTED_SASL_MECHANISM
//     with the mechanisms offered, and the connection closes, as in Kafka.
//   - Once authenticated, with connections.max.reauth.ms set: the start of
//     a re-authentication (KIP-368, v1 only); other requests go on being
//     served meanwhile, until the authentication runs out.
//   - Anywhere else (a listener without SASL, a second handshake):
//     ILLEGAL_SASL_STATE, and the connection closes.
//
// Version notes:
//   - v0: the mechanism's messages then go raw, size-prefixed without a
//     request header, and so do the answers, until the session is done; a
//     failure closes the connection without an answer, as in Kafka.
//     librdkafka requires v0 in the advertised range to use SASL at all.
//   - v1: the messages go in SaslAuthenticate requests.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(17, handler{min: 0, max: 1, handle: a.handleSaslHandshake})
	})
}

func (a *API) handleSaslHandshake(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	if c.sasl != nil {
		resp.SupportedMechanisms = c.sasl.Mechanisms()
	}
	reauth := c.authenticated && !c.expires.IsZero() && req.Version >= 1
	if c.sasl == nil || c.authenticated && !reauth || c.session != nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		c.closeAfter = true
		return respond(resp)
	}
	session, ok := c.sasl.Start(req.Mechanism)
	if !ok {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.closeAfter = true
		a.metrics.authenticated(c.listener, req.Mechanism, false)
		return respond(resp)
	}
	c.session, c.mechanism = session, req.Mechanism
	c.rawSASL = req.Version == 0
	return respond(resp)
}
