package transport

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The describes of the heartbeat-protocol groups (ConsumerGroupDescribe,
// ShareGroupDescribe, StreamsGroupDescribe) share their shape: each group
// is authorized (DESCRIBE on it), sent alone to its coordinator's actor,
// and its answer filled with its error, its members hidden when they name
// topics the client may not DESCRIBE, and its authorized operations.

// describedGroup is what describeGroups returns for one group: the
// coordinator's answer, or the error that stood for it.
type describedGroup struct {
	resp kmsg.Response
	err  *kerr.Error
}

// describeGroups sends each group's request (one makes it, for one group)
// to its coordinator at once, and returns a wait for the answers, in the
// groups' order.
func (a *API) describeGroups(c *conn, groups []string, one func(group string) kmsg.Request) func() []describedGroup {
	z := c.authz()
	calls := make([]*groupCall, len(groups))
	out := make([]describedGroup, len(groups))
	for i, g := range groups {
		switch {
		case !z.may(describe, groupResource, g):
			out[i].err = kerr.GroupAuthorizationFailed
		case g == "":
			out[i].err = kerr.InvalidGroupID
		default:
			calls[i], out[i].err = a.startGroupRequest(c, g, one(g))
		}
	}
	return func() []describedGroup {
		for i, call := range calls {
			if call != nil && out[i].err == nil {
				out[i].resp, out[i].err = call.wait(c, a.RequestTimeout)
			}
		}
		return out
	}
}

// fillDescribed completes one group's answer: code is where its error
// code goes; hide hides what the client may not see; ops is set to the
// group's authorized operations when asked for and it has no error.
func fillDescribed(c *conn, group string, err *kerr.Error, code *int16, ops *int32, includeOps bool, hide func()) {
	if err != nil {
		*code = err.Code
	}
	*ops = authorizedOperationsUnset
	if *code == 0 {
		hide()
	}
	if includeOps && *code == 0 {
		*ops = c.authz().operations(groupResource, group)
	}
}
