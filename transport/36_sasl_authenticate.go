package transport

// SaslAuthenticate: v0-2
//
// Behaviour:
//   - Carries one message of the session SaslHandshake started and
//     answers the server's. Once the mechanism is done the connection is
//     authenticated as its principal and may send any request.
//   - Failed credentials: SASL_AUTHENTICATION_FAILED with the mechanism's
//     message (for PLAIN, Kafka's "Invalid username or password", which
//     says nothing of which was wrong), answered after
//     connection.failed.authentication.delay.ms, and the connection
//     closes.
//   - With connections.max.reauth.ms set, the answer that completes an
//     authentication carries its lifetime (v1+, KIP-368); the client
//     authenticates again before it runs out, as the same principal (a
//     re-authentication as another closes the connection, as in Kafka).
//     A v0 client is not told, and its connection closes at its first
//     request after the lifetime.
//   - Without a handshake first: ILLEGAL_SASL_STATE, and the connection
//     closes.
//
// Version notes:
//   - v1: SessionLifetimeMillis (0: no re-authentication is asked for).
//   - v2: flexible.

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(36, handler{min: 0, max: 2, handle: a.handleSaslAuthenticate})
	})
}

func (a *API) handleSaslAuthenticate(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.session == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received without a SaslHandshake first, or after authentication")
		c.closeAfter = true
		return respond(resp)
	}
	answer, done, err := c.session.Step(req.SASLAuthBytes)
	if err != nil {
		c.closeAfter = true
		a.metrics.authenticated(c.listener, c.mechanism, false)
		c.s.failures.Event(c.s.log.Warn()).Str("remote", c.nc.RemoteAddr().String()).Str("listener", c.listener).
			Str("mechanism", c.mechanism).Str("reason", err.Error()).Msg("closing connection: SASL authentication failed")
		resp.ErrorCode, resp.ErrorMessage = kerr.SaslAuthenticationFailed.Code, kmsg.StringPtr(err.Error())
		delay := c.s.cfg.FailedAuthenticationDelay
		return func() kmsg.Response {
			// On the writer goroutine: the reader has stopped already.
			time.Sleep(delay)
			return resp
		}
	}
	resp.SASLAuthBytes = answer
	if done {
		p := c.session.Principal()
		if c.authenticated && p != c.principal {
			c.closeAfter = true
			a.metrics.authenticated(c.listener, c.mechanism, false)
			resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("Cannot change principals during re-authentication from " + c.principal.String() + " to " + p.String())
			return respond(resp)
		}
		resp.SessionLifetimeMillis = c.authenticatedAs(p).Milliseconds()
	}
	return respond(resp)
}
