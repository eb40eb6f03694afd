package security

import (
	"cmp"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's ACL codes, named as its protocol names them.
type (
	ResourceType = kmsg.ACLResourceType
	PatternType  = kmsg.ACLResourcePatternType
	Operation    = kmsg.ACLOperation
	Permission   = kmsg.ACLPermissionType
)

// ClusterName is the name of the one Cluster resource.
const ClusterName = "kafka-cluster"

// Wildcards: a LITERAL ACL on "*" names every resource of its type, an ACL
// for "User:*" every principal, on host "*" every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// ACL is one access control entry bound to a resource pattern (Kafka's
// AclBinding): who (a principal, "User:*" for anyone) from where (an IP
// address, "*" for anywhere) may or may not do what to which resources.
// An ACL is a value: two equal ACLs are the same ACL.
type ACL struct {
	ResourceType ResourceType `msgpack:"rt"`
	ResourceName string       `msgpack:"rn"`
	PatternType  PatternType  `msgpack:"pt"`
	Principal    string       `msgpack:"p"`
	Host         string       `msgpack:"h"`
	Operation    Operation    `msgpack:"op"`
	Permission   Permission   `msgpack:"perm"`
}

func (a ACL) String() string {
	return fmt.Sprintf("%s %s on %s from %s %s %s %q", a.Principal, strings.ToLower(a.Permission.String()),
		strings.ToLower(a.Operation.String()), a.Host, strings.ToLower(a.PatternType.String()), strings.ToLower(a.ResourceType.String()), a.ResourceName)
}

// CompareACLs orders ACLs by resource, then pattern, principal, host,
// operation and permission.
func CompareACLs(a, b ACL) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceName, b.ResourceName),
		cmp.Compare(a.PatternType, b.PatternType), cmp.Compare(a.Principal, b.Principal), cmp.Compare(a.Host, b.Host),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission))
}

// Validate returns why a could not be created, "" when it can: Kafka's
// rules for a binding (no ANY, MATCH or UNKNOWN, a principal of the form
// Type:name, a name, the cluster named kafka-cluster).
func (a ACL) Validate() string {
	switch {
	case a.ResourceType <= kmsg.ACLResourceTypeAny || a.ResourceType > kmsg.ACLResourceTypeUser:
		return "Invalid resource type " + a.ResourceType.String()
	case a.PatternType != kmsg.ACLResourcePatternTypeLiteral && a.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return "Invalid pattern type " + a.PatternType.String()
	case a.ResourceName == "":
		return "Resource name must not be empty"
	case a.ResourceType == kmsg.ACLResourceTypeCluster && a.ResourceName != ClusterName:
		return "The Cluster resource is named " + ClusterName
	case a.Operation <= kmsg.ACLOperationAny || a.Operation > kmsg.ACLOperationDescribeTokens:
		return "Invalid operation " + a.Operation.String()
	case a.Permission != kmsg.ACLPermissionTypeAllow && a.Permission != kmsg.ACLPermissionTypeDeny:
		return "Invalid permission type " + a.Permission.String()
	case a.Host == "":
		return "Host must not be empty"
	}
	if typ, name, ok := strings.Cut(a.Principal, ":"); !ok || typ == "" || name == "" {
		return fmt.Sprintf("Could not parse principal from `%s` (no colon is found between the type and the name)", a.Principal)
	}
	// NB: as Kafka, an operation its resource type has not (WRITE on a
	// group) is taken, and means nothing; so is PREFIXED on "*", which
	// names the resources whose names start with a star.
	return ""
}

// operations are the operations each resource type has (Kafka's
// ResourceType docs), besides ALL.
var operations = map[ResourceType][]Operation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite},
	kmsg.ACLResourceTypeTransactionalId: {kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeDelegationToken: {kmsg.ACLOperationDescribe},
	kmsg.ACLResourceTypeUser:            {kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens},
}

// Operations returns the operations of a resource type, for KIP-430's
// authorized operations.
func Operations(rt ResourceType) []Operation { return operations[rt] }

// ACLFilter selects ACLs (Kafka's AclBindingFilter), for DescribeAcls and
// DeleteAcls: ANY matches every value of a code, a nil string every
// string; pattern type MATCH selects the ACLs that apply to the named
// resource (LITERAL on it or on "*", PREFIXED on a prefix of it).
type ACLFilter struct {
	ResourceType ResourceType
	ResourceName *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Validate returns why f cannot select anything, "" when it can.
func (f ACLFilter) Validate() string {
	switch {
	case f.ResourceType <= kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return "Invalid resource type " + f.ResourceType.String()
	case f.PatternType <= kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return "Invalid pattern type " + f.PatternType.String()
	case f.Operation <= kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return "Invalid operation " + f.Operation.String()
	case f.Permission <= kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return "Invalid permission type " + f.Permission.String()
	}
	return ""
}

// Matches reports whether f selects a.
func (f ACLFilter) Matches(a ACL) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != a.ResourceType {
		return false
	}
	if !f.matchesPattern(a) {
		return false
	}
	return (f.Principal == nil || *f.Principal == a.Principal) &&
		(f.Host == nil || *f.Host == a.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == a.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == a.Permission)
}

func (f ACLFilter) matchesPattern(a ACL) bool {
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny:
		return f.ResourceName == nil || *f.ResourceName == a.ResourceName
	case kmsg.ACLResourcePatternTypeMatch:
		if f.ResourceName == nil {
			return true
		}
		return appliesTo(a, *f.ResourceName)
	default:
		return f.PatternType == a.PatternType && (f.ResourceName == nil || *f.ResourceName == a.ResourceName)
	}
}

// appliesTo reports whether a's pattern covers the resource name.
func appliesTo(a ACL, name string) bool {
	if a.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		return strings.HasPrefix(name, a.ResourceName)
	}
	return a.ResourceName == name || a.ResourceName == WildcardResource
}

// Authorizer decides requests as Kafka's StandardAuthorizer does: a super
// user may do anything; otherwise an ACL that matches the principal (or
// "User:*"), the host (or "*"), the resource and the operation decides,
// any matching DENY winning over every ALLOW; READ, WRITE, DELETE and ALTER
// allow DESCRIBE as well, ALTER_CONFIGS allows DESCRIBE_CONFIGS, and ALL
// allows or denies everything. A resource no ACL names at all is allowed
// only under allow.everyone.if.no.acl.found.
type Authorizer struct {
	superUsers    map[string]bool
	allowIfNoACLs bool
	// index is the last ACL set indexed, rebuilt when the set changes.
	index atomic.Pointer[aclIndex]
}

// NewAuthorizer returns an authorizer with super.users (Kafka's form,
// "User:admin;User:ops") and allow.everyone.if.no.acl.found.
func NewAuthorizer(superUsers string, allowIfNoACLs bool) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowIfNoACLs: allowIfNoACLs}
	for _, u := range strings.Split(superUsers, ";") {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	return a
}

// ACLSet is the cluster's ACLs at one metadata offset: Version tells sets
// apart (the offset of the last change), so an index is built once per
// change.
type ACLSet struct {
	Version int64
	ACLs    map[ACL]struct{}
}

// Request is who asks: a principal from a host (an IP address).
type Request struct {
	Principal Principal
	Host      string
}

// SuperUser reports whether the principal is one of super.users.
func (a *Authorizer) SuperUser(p Principal) bool { return a.superUsers[p.String()] }

// Allowed reports whether r may do op on the named resource.
func (a *Authorizer) Allowed(set ACLSet, r Request, op Operation, rt ResourceType, name string) bool {
	if a.SuperUser(r.Principal) {
		return true
	}
	principal := r.Principal.String()
	found, allowed, denied := false, false, false
	a.indexed(set).each(rt, name, func(acl ACL) {
		found = true
		if !acl.matchesWho(principal, r.Host) {
			return
		}
		if acl.Permission == kmsg.ACLPermissionTypeDeny {
			denied = denied || acl.Operation == op || acl.Operation == kmsg.ACLOperationAll
			return
		}
		allowed = allowed || allows(acl.Operation, op)
	})
	if denied {
		return false
	}
	return allowed || !found && a.allowIfNoACLs
}

// AllowedOnAny reports whether r may do op on some resource of the type
// (Kafka's authorizeByResourceType, which InitProducerId asks for WRITE
// on any topic): an ALLOW for it that no DENY of the same or a wider
// pattern takes back.
func (a *Authorizer) AllowedOnAny(set ACLSet, r Request, op Operation, rt ResourceType) bool {
	if a.SuperUser(r.Principal) {
		return true
	}
	principal := r.Principal.String()
	idx := a.indexed(set)
	var denies []ACL
	for _, acl := range idx.byType[rt] {
		if acl.Permission == kmsg.ACLPermissionTypeDeny && acl.matchesWho(principal, r.Host) &&
			(acl.Operation == op || acl.Operation == kmsg.ACLOperationAll) {
			if acl.ResourceName == WildcardResource {
				return false
			}
			denies = append(denies, acl)
		}
	}
	for _, acl := range idx.byType[rt] {
		if acl.Permission != kmsg.ACLPermissionTypeAllow || !acl.matchesWho(principal, r.Host) || !allows(acl.Operation, op) {
			continue
		}
		taken := false
		for _, d := range denies {
			if d.PatternType == kmsg.ACLResourcePatternTypePrefixed && strings.HasPrefix(acl.ResourceName, d.ResourceName) ||
				d.PatternType == kmsg.ACLResourcePatternTypeLiteral && acl.PatternType == kmsg.ACLResourcePatternTypeLiteral && d.ResourceName == acl.ResourceName {
				taken = true
				break
			}
		}
		if !taken {
			return true
		}
	}
	return a.allowIfNoACLs && len(idx.byType[rt]) == 0
}

// allows reports whether an ALLOW of granted permits op.
func allows(granted, op Operation) bool {
	switch {
	case granted == op, granted == kmsg.ACLOperationAll:
		return true
	case op == kmsg.ACLOperationDescribe:
		return granted == kmsg.ACLOperationRead || granted == kmsg.ACLOperationWrite ||
			granted == kmsg.ACLOperationDelete || granted == kmsg.ACLOperationAlter
	case op == kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

func (a ACL) matchesWho(principal, host string) bool {
	return (a.Principal == principal || a.Principal == WildcardPrincipal) && (a.Host == host || a.Host == WildcardHost)
}

// aclIndex finds the ACLs on a resource without looking at the others.
type aclIndex struct {
	version  int64
	literal  map[resourceKey][]ACL
	prefixed map[ResourceType][]ACL
	byType   map[ResourceType][]ACL
}

type resourceKey struct {
	rt   ResourceType
	name string
}

func (a *Authorizer) indexed(set ACLSet) *aclIndex {
	if idx := a.index.Load(); idx != nil && idx.version == set.Version {
		return idx
	}
	idx := &aclIndex{version: set.Version, literal: map[resourceKey][]ACL{}, prefixed: map[ResourceType][]ACL{}, byType: map[ResourceType][]ACL{}}
	for acl := range set.ACLs {
		idx.byType[acl.ResourceType] = append(idx.byType[acl.ResourceType], acl)
		if acl.PatternType == kmsg.ACLResourcePatternTypePrefixed {
			idx.prefixed[acl.ResourceType] = append(idx.prefixed[acl.ResourceType], acl)
		} else {
			k := resourceKey{acl.ResourceType, acl.ResourceName}
			idx.literal[k] = append(idx.literal[k], acl)
		}
	}
	a.index.Store(idx)
	return idx
}

// each calls f with every ACL whose pattern covers the resource.
func (idx *aclIndex) each(rt ResourceType, name string, f func(ACL)) {
	for _, acl := range idx.literal[resourceKey{rt, name}] {
		f(acl)
	}
	if name != WildcardResource {
		for _, acl := range idx.literal[resourceKey{rt, WildcardResource}] {
			f(acl)
		}
	}
	for _, acl := range idx.prefixed[rt] {
		if strings.HasPrefix(name, acl.ResourceName) {
			f(acl)
		}
	}
}
