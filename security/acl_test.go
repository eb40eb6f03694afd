package security

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func allow(principal string, op Operation, rt ResourceType, pattern PatternType, name string) ACL {
	return ACL{ResourceType: rt, ResourceName: name, PatternType: pattern, Principal: principal, Host: WildcardHost, Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(principal string, op Operation, rt ResourceType, pattern PatternType, name string) ACL {
	a := allow(principal, op, rt, pattern, name)
	a.Permission = kmsg.ACLPermissionTypeDeny
	return a
}

const (
	topic    = kmsg.ACLResourceTypeTopic
	group    = kmsg.ACLResourceTypeGroup
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
)

// The StandardAuthorizer's rules, one case each.
func TestAuthorizer(t *testing.T) {
	alice := Request{Principal: Principal{Type: "User", Name: "alice"}, Host: "10.0.0.1"}
	admin := Request{Principal: Principal{Type: "User", Name: "admin"}, Host: "10.0.0.1"}
	set := func(acls ...ACL) ACLSet {
		s := ACLSet{Version: int64(len(acls)), ACLs: map[ACL]struct{}{}}
		for _, a := range acls {
			s.ACLs[a] = struct{}{}
		}
		return s
	}
	for _, tc := range []struct {
		name          string
		acls          []ACL
		allowIfNoACLs bool
		who           Request
		op            Operation
		rt            ResourceType
		res           string
		want          bool
	}{
		{"no ACL denies", nil, false, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"no ACL on the resource, allow.everyone.if.no.acl.found", []ACL{allow("User:bob", kmsg.ACLOperationRead, topic, literal, "other")}, true, alice, kmsg.ACLOperationRead, topic, "t", true},
		{"an ACL of someone else on the resource: no longer everyone's", []ACL{allow("User:bob", kmsg.ACLOperationRead, topic, literal, "t")}, true, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"super user", nil, false, admin, kmsg.ACLOperationAlter, kmsg.ACLResourceTypeCluster, ClusterName, true},
		{"literal allow", []ACL{allow("User:alice", kmsg.ACLOperationRead, topic, literal, "t")}, false, alice, kmsg.ACLOperationRead, topic, "t", true},
		{"literal allow is not another name", []ACL{allow("User:alice", kmsg.ACLOperationRead, topic, literal, "t")}, false, alice, kmsg.ACLOperationRead, topic, "tt", false},
		{"wildcard resource", []ACL{allow("User:alice", kmsg.ACLOperationRead, topic, literal, "*")}, false, alice, kmsg.ACLOperationRead, topic, "t", true},
		{"wildcard principal", []ACL{allow("User:*", kmsg.ACLOperationRead, topic, literal, "t")}, false, alice, kmsg.ACLOperationRead, topic, "t", true},
		{"prefixed", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "ord")}, false, alice, kmsg.ACLOperationWrite, topic, "orders", true},
		{"prefixed is not a suffix", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "ord")}, false, alice, kmsg.ACLOperationWrite, topic, "sord", false},
		{"another resource type", []ACL{allow("User:alice", kmsg.ACLOperationRead, group, literal, "t")}, false, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"read implies describe", []ACL{allow("User:alice", kmsg.ACLOperationRead, topic, literal, "t")}, false, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"describe does not imply read", []ACL{allow("User:alice", kmsg.ACLOperationDescribe, topic, literal, "t")}, false, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"alter configs implies describe configs", []ACL{allow("User:alice", kmsg.ACLOperationAlterConfigs, topic, literal, "t")}, false, alice, kmsg.ACLOperationDescribeConfigs, topic, "t", true},
		{"all allows anything", []ACL{allow("User:alice", kmsg.ACLOperationAll, topic, literal, "t")}, false, alice, kmsg.ACLOperationDelete, topic, "t", true},
		{"deny wins", []ACL{allow("User:alice", kmsg.ACLOperationAll, topic, literal, "*"), deny("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "o")}, false, alice, kmsg.ACLOperationWrite, topic, "orders", false},
		{"a deny of write leaves read", []ACL{allow("User:alice", kmsg.ACLOperationAll, topic, literal, "*"), deny("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "o")}, false, alice, kmsg.ACLOperationRead, topic, "orders", true},
		{"a deny of read does not deny describe", []ACL{allow("User:alice", kmsg.ACLOperationDescribe, topic, literal, "t"), deny("User:alice", kmsg.ACLOperationRead, topic, literal, "t")}, false, alice, kmsg.ACLOperationDescribe, topic, "t", true},
		{"deny all", []ACL{allow("User:alice", kmsg.ACLOperationRead, topic, literal, "t"), deny("User:*", kmsg.ACLOperationAll, topic, literal, "*")}, false, alice, kmsg.ACLOperationRead, topic, "t", false},
		{"another host", []ACL{{ResourceType: topic, ResourceName: "t", PatternType: literal, Principal: "User:alice", Host: "10.0.0.2", Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}}, false, alice, kmsg.ACLOperationRead, topic, "t", false},
	} {
		a := NewAuthorizer("User:admin", tc.allowIfNoACLs)
		if got := a.Allowed(set(tc.acls...), tc.who, tc.op, tc.rt, tc.res); got != tc.want {
			t.Errorf("%s: allowed %v, want %v", tc.name, got, tc.want)
		}
	}
}

// InitProducerId's question: may the principal WRITE some topic?
func TestAllowedOnAny(t *testing.T) {
	alice := Request{Principal: Principal{Type: "User", Name: "alice"}, Host: "10.0.0.1"}
	for _, tc := range []struct {
		name string
		acls []ACL
		want bool
	}{
		{"none", nil, false},
		{"one topic", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, literal, "t")}, true},
		{"taken back by a literal deny", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, literal, "t"), deny("User:alice", kmsg.ACLOperationWrite, topic, literal, "t")}, false},
		{"taken back by a wider prefix", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "orders"), deny("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "ord")}, false},
		{"a narrower deny leaves the prefix", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "ord"), deny("User:alice", kmsg.ACLOperationWrite, topic, prefixed, "orders")}, true},
		{"denied everywhere", []ACL{allow("User:alice", kmsg.ACLOperationWrite, topic, literal, "t"), deny("User:alice", kmsg.ACLOperationAll, topic, literal, "*")}, false},
	} {
		s := ACLSet{Version: int64(len(tc.acls)), ACLs: map[ACL]struct{}{}}
		for _, a := range tc.acls {
			s.ACLs[a] = struct{}{}
		}
		if got := NewAuthorizer("", false).AllowedOnAny(s, alice, kmsg.ACLOperationWrite, topic); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Filters as DescribeAcls and DeleteAcls use them.
func TestACLFilter(t *testing.T) {
	lit := allow("User:alice", kmsg.ACLOperationRead, topic, literal, "orders")
	pre := allow("User:alice", kmsg.ACLOperationRead, topic, prefixed, "ord")
	star := allow("User:bob", kmsg.ACLOperationWrite, topic, literal, "*")
	name, bob := "orders", "User:bob"
	for _, tc := range []struct {
		name string
		f    ACLFilter
		want []bool // lit, pre, star
	}{
		{"any", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, []bool{true, true, true}},
		{"match orders", ACLFilter{ResourceType: topic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeMatch, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, []bool{true, true, true}},
		{"literal orders", ACLFilter{ResourceType: topic, ResourceName: &name, PatternType: literal, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, []bool{true, false, false}},
		{"any pattern named orders", ACLFilter{ResourceType: topic, ResourceName: &name, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, []bool{true, false, false}},
		{"bob's", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Principal: &bob, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}, []bool{false, false, true}},
		{"read", ACLFilter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAny}, []bool{true, true, false}},
	} {
		for i, a := range []ACL{lit, pre, star} {
			if got := tc.f.Matches(a); got != tc.want[i] {
				t.Errorf("%s matches %s: %v, want %v", tc.name, a, got, tc.want[i])
			}
		}
	}
}

// Kafka's refusals of a binding.
func TestACLValidate(t *testing.T) {
	good := allow("User:alice", kmsg.ACLOperationRead, topic, literal, "t")
	if why := good.Validate(); why != "" {
		t.Fatalf("a good ACL refused: %s", why)
	}
	for name, edit := range map[string]func(*ACL){
		"any resource type":        func(a *ACL) { a.ResourceType = kmsg.ACLResourceTypeAny },
		"match pattern":            func(a *ACL) { a.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"principal without a type": func(a *ACL) { a.Principal = "alice" },
		"any operation":            func(a *ACL) { a.Operation = kmsg.ACLOperationAny },
		"a cluster not named so":   func(a *ACL) { a.ResourceType, a.Operation = kmsg.ACLResourceTypeCluster, kmsg.ACLOperationAlter },
		"any permission":           func(a *ACL) { a.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":               func(a *ACL) { a.ResourceName = "" },
	} {
		a := good
		edit(&a)
		if a.Validate() == "" {
			t.Errorf("%s: accepted", name)
		}
	}
}
