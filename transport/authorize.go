package transport

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/security"
)

// authz decides the accesses of one request: who asks, for which API key.
// Handlers take it on the reader goroutine (conn.authz), since a
// re-authentication may change the connection's principal later, and use
// it in their finish too.
type authz struct {
	a   *API
	key int16
	who security.Request
}

func (c *conn) authz() authz {
	return authz{a: c.s.api, key: c.handling, who: security.Request{Principal: c.principal, Host: c.ip}}
}

// errDenied stands for a denial where a handler meets errors of several
// kinds in one place.
var errDenied = errors.New("denied")

// on reports whether an authorizer decides requests; without one every
// request is allowed.
func (z authz) on() bool { return z.a.Authorizer != nil }

// may reports whether the request may do op on the named resource. A
// denial is counted and logged (rate-limited), naming what would allow
// it. An access the permission table does not name for the key is denied
// and logged as the bug it is.
//
// NB: a node serves Kafka only once its image holds its own registration,
// so the image an authorizer decides from is always loaded: Kafka's
// AUTHORIZER_NOT_READY has no window to be answered in.
func (z authz) may(op security.Operation, rt security.ResourceType, name string) bool {
	if !z.on() {
		return true
	}
	if !z.tabled(op, rt) {
		return false
	}
	if z.a.Authorizer.Allowed(z.a.Image().ACLSet(), z.who, op, rt, name) {
		return true
	}
	z.denied(op, rt, name)
	return false
}

// sees reports whether the request may do op on the named resource,
// for a listing that leaves out what the client may not see: a resource
// left out is not a denial, and is neither counted nor logged.
func (z authz) sees(op security.Operation, rt security.ResourceType, name string) bool {
	if !z.on() {
		return true
	}
	return z.tabled(op, rt) && z.a.Authorizer.Allowed(z.a.Image().ACLSet(), z.who, op, rt, name)
}

// memo returns may for one operation on resources of one type, asked
// once per name: a request that reads its partitions again while it
// waits (Fetch) is denied, counted and logged once.
func (z authz) memo(op security.Operation, rt security.ResourceType) func(name string) bool {
	if !z.on() {
		return func(string) bool { return true }
	}
	seen := map[string]bool{}
	return func(name string) bool {
		ok, asked := seen[name]
		if !asked {
			ok = z.may(op, rt, name)
			seen[name] = ok
		}
		return ok
	}
}

// unreadable takes out of topics, in order, the ones the request may not
// READ, and returns them: the offsets of the others are committed or
// deleted (OffsetCommit, TxnOffsetCommit, OffsetDelete), these answered
// TOPIC_AUTHORIZATION_FAILED. name gives a topic's name, ok false for one
// not to authorize here.
func unreadable[T any](z authz, topics *[]T, name func(T) (string, bool)) []T {
	var denied []T
	*topics = slices.DeleteFunc(*topics, func(t T) bool {
		if n, ok := name(t); ok && !z.may(read, topicResource, n) {
			denied = append(denied, t)
			return true
		}
		return false
	})
	return denied
}

// mayAny reports whether the request may do op on some resource of the
// type (InitProducerId's WRITE on any topic).
func (z authz) mayAny(op security.Operation, rt security.ResourceType) bool {
	if !z.on() {
		return true
	}
	return z.tabled(op, rt) && z.a.Authorizer.AllowedOnAny(z.a.Image().ACLSet(), z.who, op, rt)
}

// operations returns KIP-430's authorized operations of a resource: a
// bit (1 << code) per operation of its type the request may do; every
// one without an authorizer, as Kafka. Nothing is logged: a client
// asking what it may do is not denied anything.
func (z authz) operations(rt security.ResourceType, name string) int32 {
	var bits int32
	for _, op := range security.Operations(rt) {
		if !z.on() || z.a.Authorizer.Allowed(z.a.Image().ACLSet(), z.who, op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

// clusterOperations is the cluster's authorized operations as Kafka
// answers them: 0 to a client that may not DESCRIBE the cluster.
func (z authz) clusterOperations() int32 {
	if z.on() && !z.sees(describe, clusterResource, clusterName) {
		return 0
	}
	return z.operations(clusterResource, clusterName)
}

func (z authz) tabled(op security.Operation, rt security.ResourceType) bool {
	if slices.Contains(permissions[z.key], access{op, rt}) {
		return true
	}
	z.a.denials.Event(z.a.Logger.Error()).Int16("key", z.key).Str("operation", op.String()).Str("resource_type", rt.String()).
		Msg("bug: a handler asks for an access its API key's line of the permission table does not name; denied")
	return false
}

func (z authz) denied(op security.Operation, rt security.ResourceType, name string) {
	z.a.metrics.denied(rt, op)
	z.a.denials.Event(z.a.Logger.Info()).Str("principal", z.who.Principal.String()).Str("host", z.who.Host).
		Str("api", apiName(z.key)).Msg(z.denial(op, rt, name))
}

// denial says who was denied what, and the kafka-acls command that
// would allow it: the message of a denial where Kafka's protocol has one.
func (z authz) denial(op security.Operation, rt security.ResourceType, name string) string {
	resource := fmt.Sprintf("--%s %s", aclsFlag(rt), name)
	if rt == clusterResource {
		resource = "--cluster"
	}
	return fmt.Sprintf("%s may not %s %s %q (kafka-acls --add --allow-principal %s --operation %s %s would allow it)",
		z.who.Principal, op, rt, name, z.who.Principal, operationName(op), resource)
}

// aclsFlag is kafka-acls' option naming a resource of the type.
func aclsFlag(rt security.ResourceType) string {
	switch rt {
	case txnResource:
		return "transactional-id"
	case kmsg.ACLResourceTypeDelegationToken:
		return "delegation-token"
	case kmsg.ACLResourceTypeUser:
		return "user-principal"
	}
	return strings.ToLower(rt.String())
}

// operationName is an operation as kafka-acls spells it: DescribeConfigs.
func operationName(op security.Operation) string {
	var b strings.Builder
	for _, word := range strings.Split(op.String(), "_") {
		b.WriteString(word[:1] + strings.ToLower(word[1:]))
	}
	return b.String()
}

// configDenied applies op (DESCRIBE_CONFIGS or ALTER_CONFIGS) to a config
// resource, as Kafka maps them: a topic to itself, a group to itself, a
// broker, broker logger or client-metrics resource to the cluster. It
// returns the error and message of a denial, nil when allowed or when
// the type is not one of those (which the caller refuses).
func (z authz) configDenied(op security.Operation, typ kmsg.ConfigResourceType, name string) (*kerr.Error, string) {
	rt, err := clusterResource, kerr.ClusterAuthorizationFailed
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		rt, err = topicResource, kerr.TopicAuthorizationFailed
	case kmsg.ConfigResourceTypeGroupConfig:
		rt, err = groupResource, kerr.GroupAuthorizationFailed
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		name = clusterName
	default:
		return nil, ""
	}
	if z.may(op, rt, name) {
		return nil, ""
	}
	return err, z.denial(op, rt, name)
}
