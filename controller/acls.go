package controller

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
	"github.com/skeinlog/skein/security"
)

// CreateACLs adds ACLs (CreateAcls): each is checked on its own, and one
// the cluster has already is a success that changes nothing, as in
// Kafka's AclControlManager.
type CreateACLs struct {
	ACLs []security.ACL `msgpack:"acls"`
}

// CreateACLsResult answers CreateACLs, one result per ACL in order.
type CreateACLsResult struct {
	Results []ACLResult `msgpack:"results"`
}

// ACLResult is one ACL's or one filter's outcome.
type ACLResult struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
	// Deleted are the ACLs a DeleteACLs filter removed.
	Deleted []security.ACL `msgpack:"deleted,omitempty"`
}

func (*CreateACLs) kind() commandKind                        { return kindCreateACLs }
func (*CreateACLs) timeout() time.Duration                   { return 0 }
func (*CreateACLs) newResult() any                           { return &CreateACLsResult{} }
func (m *CreateACLs) failed(err *kerr.Error, msg string) any { return m.Failed(err, msg) }

// Failed returns every ACL's result as err: what the caller answers when
// the controller could not be asked.
func (m *CreateACLs) Failed(err *kerr.Error, msg string) *CreateACLsResult {
	res := &CreateACLsResult{}
	for range m.ACLs {
		res.Results = append(res.Results, ACLResult{Err: err, Message: msg})
	}
	return res
}

func (m *CreateACLs) decide(c *Controller) (any, []image.Record) {
	res := &CreateACLsResult{}
	var records []image.Record
	adding := map[security.ACL]bool{}
	for _, acl := range m.ACLs {
		if why := acl.Validate(); why != "" {
			res.Results = append(res.Results, ACLResult{Err: kerr.InvalidRequest, Message: why})
			continue
		}
		res.Results = append(res.Results, ACLResult{})
		if _, ok := c.head.ACLs[acl]; ok || adding[acl] {
			continue
		}
		adding[acl] = true
		records = append(records, &image.CreateACL{ACL: acl})
	}
	return res, records
}

// DeleteACLs removes the ACLs each filter selects (DeleteAcls); an ACL two
// filters select is removed once and reported under both.
type DeleteACLs struct {
	Filters []security.ACLFilter `msgpack:"filters"`
}

// DeleteACLsResult answers DeleteACLs, one result per filter in order.
type DeleteACLsResult struct {
	Results []ACLResult `msgpack:"results"`
}

func (*DeleteACLs) kind() commandKind                        { return kindDeleteACLs }
func (*DeleteACLs) timeout() time.Duration                   { return 0 }
func (*DeleteACLs) newResult() any                           { return &DeleteACLsResult{} }
func (m *DeleteACLs) failed(err *kerr.Error, msg string) any { return m.Failed(err, msg) }

// Failed returns every filter's result as err.
func (m *DeleteACLs) Failed(err *kerr.Error, msg string) *DeleteACLsResult {
	res := &DeleteACLsResult{}
	for range m.Filters {
		res.Results = append(res.Results, ACLResult{Err: err, Message: msg})
	}
	return res
}

func (m *DeleteACLs) decide(c *Controller) (any, []image.Record) {
	res := &DeleteACLsResult{}
	var records []image.Record
	deleting := map[security.ACL]bool{}
	for _, f := range m.Filters {
		if why := f.Validate(); why != "" {
			res.Results = append(res.Results, ACLResult{Err: kerr.InvalidRequest, Message: why})
			continue
		}
		var r ACLResult
		for acl := range c.head.ACLs {
			if f.Matches(acl) {
				r.Deleted = append(r.Deleted, acl)
			}
		}
		slices.SortFunc(r.Deleted, security.CompareACLs)
		for _, acl := range r.Deleted {
			if !deleting[acl] {
				deleting[acl] = true
				records = append(records, &image.DeleteACL{ACL: acl})
			}
		}
		res.Results = append(res.Results, r)
	}
	return res, records
}
