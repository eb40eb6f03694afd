package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/security"
	"github.com/skeinlog/skein/transport"
)

// The resources the requests name. A request whose stage (e) would
// destroy or change what later keys need names one of its own instead:
// its name says which key it belongs to, so that the snapshot's
// expected changes read as a list of those keys' effects.
const (
	permTopic   = "perm-t" // 1 partition: 2 records, and the open transaction's 1
	permGroup   = "perm-g" // an Empty classic group, with an offset committed on perm-t/0
	permTxn     = "perm-x" // a transaction in progress, on perm-t/0
	permMissing = "perm-missing"

	// permConsumerGroup is a KIP-848 consumer group with a member on
	// perm-t, for the consumer group APIs (perm-g is a classic group).
	permConsumerGroup = "perm-g-consumer"

	// permProducerID is a producer id no coordinator gave: the
	// transactional requests that name it are authorized, then refused
	// by the coordinator, and so change nothing.
	permProducerID = 4242424242
)

// TestPermissionTable: for every API key of transport.Permissions, a
// well-formed request
//
//	(a) sent before authentication closes the connection, unanswered;
//	(b) from alice without ACLs is denied with Kafka's error, or answered
//	    without what she may not see where Kafka filters silently;
//	(f) naming a missing topic instead is answered as (b), byte for byte
//	    but the name: a denial does not tell whether a topic exists;
//	(c) with DESCRIBE on every resource it names succeeds if DESCRIBE is
//	    all it needs, else is denied as (b);
//	(d) with the table's ACLs and a DENY of the same beside them is
//	    denied as (b), byte for byte;
//	(e) with exactly the table's ACLs, on the resources it names, is not
//	    denied: its answer carries the errors the case expects, if any.
//
// A super user's snapshot of the cluster before and after all of it
// differs by exactly what the (e) stages did. A key added to the table
// without a case here fails the test.
func TestPermissionTable(t *testing.T) {
	s := newPermSuite(t)
	cases := permCases(t, s)
	table := transport.Permissions()
	for _, key := range slices.Sorted(maps.Keys(table)) {
		switch free := slices.Contains(authenticationKeys, key); {
		case free && len(table[key]) != 0:
			t.Errorf("api key %d needs %v, but clients send it to authenticate", key, table[key])
		case !free && !slices.ContainsFunc(cases, func(pc permCase) bool { return pc.key == key }):
			t.Errorf("no request for api key %d", key)
		}
	}
	for _, pc := range cases {
		line, ok := table[pc.key]
		switch {
		case !ok:
			t.Errorf("a case for api key %d, which the permission table does not name", pc.key)
		case pc.denied == nil && pc.shows == nil:
			t.Errorf("api key %d: a case neither denied nor filtered", pc.key)
		case !pc.describe && !slices.ContainsFunc(line, func(acc transport.Access) bool { return acc.Operation != kmsg.ACLOperationDescribe }):
			t.Errorf("api key %d needs only DESCRIBE (%v): its case must expect stage (c) to succeed", pc.key, line)
		}
	}
	if t.Failed() {
		return
	}

	before := s.snapshot(t)
	t.Run("17_18_36_authentication", s.authentication)
	for _, pc := range cases {
		name := fmt.Sprintf("%02d_%s", pc.key, kmsg.NameForKey(pc.key))
		if pc.name != "" {
			name += "_" + pc.name
		}
		t.Run(name, func(t *testing.T) { s.run(t, pc, table[pc.key]) })
	}
	// CreatePartitions(e) answers once the controller committed the new
	// partition; this node opens its log after.
	waitLoaded(t, s.ctx, s.adm, "perm-37-grow", 2)
	after := s.snapshot(t)
	s.checkSnapshot(t, before, after)
}

// permSuite is the node under test and the clients that drive it.
type permSuite struct {
	ctx      context.Context
	su       *kgo.Client // User:ANONYMOUS on PLAINTEXT, a super user
	adm      *kadm.Client
	saslAddr string
	node     string          // the node's id, as a broker config resource names it
	versions map[int16]int16 // the highest version the node serves, by key
}

func newPermSuite(t *testing.T) *permSuite {
	const longerThanTheTest = 10 * time.Minute / time.Millisecond
	b := aclBroker(t, func(c *configs.Node) {
		// SaslHandshake and SaslAuthenticate then serve authenticated
		// clients too (KIP-368).
		c.ConnectionsMaxReauthMs = int64(longerThanTheTest)
		// perm-g-consumer's member stays without heartbeats.
		c.GroupConsumerSessionTimeoutMs, c.GroupConsumerMaxSessionTimeoutMs = int32(longerThanTheTest), int32(longerThanTheTest)
	})
	s := &permSuite{ctx: ctxFor(t), su: b.client(), saslAddr: b.node.ListenerAddr("SASL_PLAINTEXT").String(),
		node: strconv.Itoa(int(b.cfg.NodeID)), versions: map[int16]int16{}}
	s.adm = kadm.NewClient(s.su)

	c := dialPerm(t, s.saslAddr)
	av := c.do(t, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range av.ApiKeys {
		s.versions[k.ApiKey] = k.MaxVersion
	}

	for _, topic := range []string{permTopic, "perm-20-deleted", "perm-21-records", "perm-27-markers", "perm-33-alter",
		"perm-37-grow", "perm-44-alter"} {
		mustCreate(t, s.ctx, s.adm, topic, 1, nil)
	}
	produce(t, s.ctx, s.su, &kgo.Record{Topic: permTopic, Value: []byte("1")}, &kgo.Record{Topic: permTopic, Value: []byte("2")})
	produce(t, s.ctx, s.su, &kgo.Record{Topic: "perm-21-records", Value: []byte("1")}, &kgo.Record{Topic: "perm-21-records", Value: []byte("2")})
	// Offset 1 committed for perm-g, and for the groups DeleteGroups(e)
	// and OffsetDelete(e) change; perm-47-offsets keeps one, so that it
	// stays a group.
	for g, topics := range map[string][]string{permGroup: {permTopic}, "perm-42-deleted": {permTopic},
		"perm-47-offsets": {permTopic, "perm-21-records"}} {
		offsets := kadm.Offsets{}
		for _, topic := range topics {
			offsets.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		}
		res, err := s.adm.CommitOffsets(s.ctx, g, offsets)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatalf("commit for %s: %v", g, err)
		}
	}
	join := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	join.Group, join.MemberID, join.SubscribedTopicNames = permConsumerGroup, "perm-setup-member", []string{permTopic}
	if resp, err := join.RequestWith(s.ctx, s.su); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("join %s: %v %v", permConsumerGroup, err, resp)
	}
	// DeleteAcls(e) deletes this one.
	s.acls(t, kmsg.ACLPermissionTypeAllow, []grant{{kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, "perm-31-dave"}}, "User:dave")

	// The transaction stays open to the end (its timeout is far longer
	// than the test): DescribeTransactions and ListTransactions have
	// something to show, and the transactional keys something to fail
	// to change.
	tx := b.client(kgo.TransactionalID(permTxn), kgo.TransactionTimeout(longerThanTheTest*time.Millisecond), kgo.DefaultProduceTopic(permTopic))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(t, s.ctx, tx, kgo.StringRecord("in the transaction"))
	return s
}

// authenticationKeys are the keys a client sends to authenticate:
// permSuite.authentication is their case.
var authenticationKeys = []int16{int16(kmsg.SASLHandshake), int16(kmsg.ApiVersions), int16(kmsg.SASLAuthenticate)}

// authentication: ApiVersions, SaslHandshake and SaslAuthenticate need
// no permission. Alice, without an ACL, is served them before she
// authenticates and once she has (ApiVersions, then a re-authentication,
// KIP-368). Stages (a) to (f) do not apply: a client may send them
// before authenticating, and they name no resource.
func (s *permSuite) authentication(t *testing.T) {
	c := dialPerm(t, s.saslAddr)
	for _, phase := range []string{"before authentication", "authenticated"} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = s.versions[int16(kmsg.ApiVersions)]
		req.ClientSoftwareName, req.ClientSoftwareVersion = "perm", "1"
		if av := c.do(t, req).(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
			t.Errorf("ApiVersions %s: %v, %d keys", phase, kerr.ErrorForCode(av.ErrorCode), len(av.ApiKeys))
		}
		c.login(t, "alice")
	}
	// The connection serves on: do fails the test if it was closed.
	c.do(t, kmsg.NewPtrMetadataRequest())
}

// run takes one case through the stages. Alice has no ACL between them:
// each stage's are its own.
func (s *permSuite) run(t *testing.T, pc permCase, line []transport.Access) {
	version := s.version(pc)
	req := func(topic string) kmsg.Request {
		r := pc.build(topic)
		r.SetVersion(version)
		return r
	}
	granted := pc.grants(line)
	if len(granted) == 0 {
		t.Fatalf("the request names none of the resources of its line of the table %v", line)
	}
	var describe []grant
	for _, rt := range resourceTypes(line) {
		describe = append(describe, pc.grants([]transport.Access{{Operation: kmsg.ACLOperationDescribe, ResourceType: rt}})...)
	}

	t.Run("a_unauthenticated", func(t *testing.T) { s.unanswered(t, req(pc.topic)) })

	alice := dialPerm(t, s.saslAddr)
	alice.login(t, "alice")
	noACLs := alice.do(t, req(pc.topic))
	t.Run("b_no_acls", func(t *testing.T) { pc.checkDenied(t, noACLs) })

	t.Run("f_missing_topic", func(t *testing.T) {
		missing := req(permMissing)
		if !bytes.Contains(missing.AppendTo(nil), []byte(permMissing)) {
			return // the request names no topic: no existence to leak
		}
		resp := alice.do(t, missing)
		replaceStrings(reflect.ValueOf(resp), permMissing, pc.topic)
		if got, want := resp.AppendTo(nil), noACLs.AppendTo(nil); !bytes.Equal(got, want) {
			t.Errorf("answered\n%+v\nfor %s, and\n%+v\nfor %s", resp, permMissing, noACLs, pc.topic)
		}
	})

	t.Run("c_describe", func(t *testing.T) {
		s.withACLs(t, describe, nil, func() {
			resp := alice.do(t, req(pc.topic))
			if pc.describe {
				pc.checkAllowed(t, resp)
			} else {
				pc.checkDenied(t, resp)
			}
		})
	})

	if pc.partial != nil {
		t.Run("c_partial", func(t *testing.T) {
			s.withACLs(t, pc.grants(pc.partial), nil, func() {
				resp := alice.do(t, req(pc.topic))
				if codes := errorCodes(resp); len(codes) != 0 || pc.shows(resp) != 0 {
					t.Errorf("errors %s, %d of its resources shown; want with %v alone none shown and no error",
						codeNames(codes), pc.shows(resp), pc.partial)
				}
			})
		})
	}

	t.Run("d_deny_beside_allow", func(t *testing.T) {
		s.withACLs(t, granted, granted, func() {
			resp := alice.do(t, req(pc.topic))
			if got, want := resp.AppendTo(nil), noACLs.AppendTo(nil); !bytes.Equal(got, want) {
				t.Errorf("answered\n%+v\nwant, as without ACLs,\n%+v", resp, noACLs)
			}
		})
	})

	t.Run("e_table", func(t *testing.T) {
		s.withACLs(t, granted, nil, func() { pc.checkAllowed(t, alice.do(t, req(pc.topic))) })
	})
}

// version is the case's pinned version, else the highest one the node
// and kmsg both speak.
func (s *permSuite) version(pc permCase) int16 {
	if pc.version > 0 {
		return pc.version
	}
	return min(pc.build(pc.topic).MaxVersion(), s.versions[pc.key])
}

// unanswered sends req on a connection that did not authenticate: the
// node must close it without an answer.
func (s *permSuite) unanswered(t *testing.T, req kmsg.Request) {
	c := dialPerm(t, s.saslAddr)
	if _, err := c.send(req); err != nil {
		t.Fatal(err)
	}
	var b [1]byte
	n, err := c.nc.Read(b[:])
	var ne net.Error
	switch {
	case n > 0:
		t.Error("answered before authentication")
	case errors.As(err, &ne) && ne.Timeout():
		t.Error("neither answered nor closed")
	case !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET):
		t.Errorf("read: %v, want the connection closed", err)
	}
}

// withACLs gives alice the ACLs, runs f, and takes every ACL of hers
// away again. The node that answers CreateAcls and DeleteAcls has
// applied them, and it is the one alice asks.
func (s *permSuite) withACLs(t *testing.T, allow, deny []grant, f func()) {
	t.Helper()
	defer s.clearACLs(t, "User:alice")
	s.acls(t, kmsg.ACLPermissionTypeAllow, allow, "User:alice")
	s.acls(t, kmsg.ACLPermissionTypeDeny, deny, "User:alice")
	f()
}

func (s *permSuite) acls(t *testing.T, perm kmsg.ACLPermissionType, grants []grant, principal string) {
	t.Helper()
	if len(grants) == 0 {
		return
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, g := range grants {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = g.rt, g.name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", g.op, perm
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(s.ctx, s.su)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls %+v: %v %v", req.Creations[i], kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
}

func (s *permSuite) clearACLs(t *testing.T, principal string) {
	t.Helper()
	req := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Principal, f.Operation, f.PermissionType = kmsg.StringPtr(principal), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Filters = append(req.Filters, f)
	resp, err := req.RequestWith(s.ctx, s.su)
	if err == nil && resp.Results[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Results[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("DeleteAcls of %s: %v", principal, err)
	}
}

// grant is one ACL's resource and operation.
type grant struct {
	op   kmsg.ACLOperation
	rt   kmsg.ACLResourceType
	name string
}

// permCase is one well-formed request of an API key and what its stages
// expect.
type permCase struct {
	key  int16
	name string // beside the key, when it has several cases
	// version pins the request's version where the highest would not
	// name its topic by name (topic ids); 0 takes the highest.
	version int16
	// topic, group and txn are the resources the request names (""
	// none of the type), on which the stages grant: the table's
	// accesses to a type the request does not name are not granted.
	// Every request names the cluster, for the keys whose line names it.
	topic, group, txn string
	// build makes the request naming topic: the case's, or permMissing.
	build func(topic string) kmsg.Request
	// denied are the error codes of a denial (b, d, and c unless
	// describe), all of them; none for a listing that leaves out what
	// alice may not see instead, and answers without an error.
	denied []*kerr.Error
	// shows counts the case's resources in an answer, for the answers
	// that list them: none when denied or filtered, some once allowed.
	shows func(kmsg.Response) int
	// describe: DESCRIBE on the resources named is all the request
	// needs, and stage (c) succeeds.
	describe bool
	// partial, when set, are accesses that show nothing of the
	// resources without a denial (a filter applied inside an answer).
	partial []transport.Access
	// allowed are the error codes of the answer once authorized (c when
	// describe, e); none when the request succeeds outright.
	allowed []*kerr.Error
}

// grants are the accesses on the resources of their types the request
// names; an access to a type it names none of is left out.
func (pc permCase) grants(accesses []transport.Access) []grant {
	var out []grant
	for _, acc := range accesses {
		if name := pc.resource(acc.ResourceType); name != "" {
			out = append(out, grant{acc.Operation, acc.ResourceType, name})
		}
	}
	return out
}

// resource is the name of the resource of type rt the request names, ""
// for none.
func (pc permCase) resource(rt kmsg.ACLResourceType) string {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return pc.topic
	case kmsg.ACLResourceTypeGroup:
		return pc.group
	case kmsg.ACLResourceTypeTransactionalId:
		return pc.txn
	case kmsg.ACLResourceTypeCluster:
		return security.ClusterName
	}
	return ""
}

func resourceTypes(line []transport.Access) []kmsg.ACLResourceType {
	var out []kmsg.ACLResourceType
	for _, acc := range line {
		if !slices.Contains(out, acc.ResourceType) {
			out = append(out, acc.ResourceType)
		}
	}
	return out
}

func (pc permCase) checkDenied(t *testing.T, resp kmsg.Response) {
	t.Helper()
	got := errorCodes(resp)
	if want := codesOf(pc.denied); !slices.Equal(got, want) {
		t.Errorf("errors %s, want %s", codeNames(got), codeNames(want))
	}
	if pc.denied == nil && pc.shows(resp) != 0 {
		t.Errorf("shows %d of its resources, want none: %+v", pc.shows(resp), resp)
	}
}

func (pc permCase) checkAllowed(t *testing.T, resp kmsg.Response) {
	t.Helper()
	got := errorCodes(resp)
	if want := codesOf(pc.allowed); !slices.Equal(got, want) {
		t.Errorf("errors %s, want %s: %+v", codeNames(got), codeNames(want), resp)
	}
	if pc.shows != nil && pc.shows(resp) == 0 {
		t.Errorf("shows none of its resources: %+v", resp)
	}
}

// errorCodes are the distinct non-zero values of every int16 field named
// ErrorCode in resp, sorted.
func errorCodes(resp kmsg.Response) []int16 {
	var codes []int16
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 {
					if c := int16(v.Field(i).Int()); c != 0 && !slices.Contains(codes, c) {
						codes = append(codes, c)
					}
					continue
				}
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(resp))
	slices.Sort(codes)
	return codes
}

// replaceStrings replaces old with new in every string of v, a
// response's fields and the messages that quote them alike.
func replaceStrings(v reflect.Value, old, new string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			replaceStrings(v.Elem(), old, new)
		}
	case reflect.Slice:
		for i := range v.Len() {
			replaceStrings(v.Index(i), old, new)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			replaceStrings(v.Field(i), old, new)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(strings.ReplaceAll(v.String(), old, new))
		}
	}
}

func codesOf(errs []*kerr.Error) []int16 {
	var codes []int16
	for _, e := range errs {
		codes = append(codes, e.Code)
	}
	slices.Sort(codes)
	return codes
}

func codeNames(codes []int16) string {
	var names []string
	for _, c := range codes {
		names = append(names, kerr.TypedErrorForCode(c).Message)
	}
	return "[" + strings.Join(names, " ") + "]"
}

// permConn is one raw connection to the node's SASL listener: requests
// at exact versions, answers compared byte for byte.
type permConn struct {
	nc   net.Conn
	corr int32
}

func dialPerm(t *testing.T, addr string) *permConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// A bound on a stuck test, not a timing assertion.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &permConn{nc: nc}
}

// send writes req, formatted into a buffer of its own: AppendRequest
// sizes the frame from the start of the buffer it is given.
func (c *permConn) send(req kmsg.Request) (int32, error) {
	c.corr++
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("perm"))
	_, err := c.nc.Write(f.AppendRequest(nil, req, c.corr))
	return c.corr, err
}

// receive reads the answer to req, sent as corr.
func (c *permConn) receive(req kmsg.Request, corr int32) (kmsg.Response, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		return nil, err
	}
	rd := kbin.Reader{Src: frame}
	if got := rd.Int32(); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	// ApiVersions answers with a v0 header at every version (KIP-511).
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%T: %w", resp, err)
	}
	return resp, nil
}

// do sends req and returns its answer; it fails the test when there is
// none.
func (c *permConn) do(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	corr, err := c.send(req)
	if err == nil {
		var resp kmsg.Response
		if resp, err = c.receive(req, corr); err == nil {
			return resp
		}
	}
	t.Fatalf("%T v%d: %v", req, req.GetVersion(), err)
	return nil
}

// login authenticates as user with SASL/PLAIN; once authenticated, it is
// a re-authentication (KIP-368).
func (c *permConn) login(t *testing.T, user string) {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "PLAIN"
	if r := c.do(t, hs).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version, auth.SASLAuthBytes = 2, []byte("\x00"+user+"\x00"+user+"-secret")
	if r := c.do(t, auth).(*kmsg.SASLAuthenticateResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslAuthenticate: %v %v", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
	}
}

// snapshot is what a super user sees of everything a request could
// change, one line a thing: what it is, and its state.
type snapshot map[string]string

// permGroups are the groups whose configs the snapshot reads: listing
// groups shows only the groups with members or offsets.
var permGroups = []string{permGroup, "perm-33-alter", "perm-44-alter"}

func (s *permSuite) snapshot(t *testing.T) snapshot {
	t.Helper()
	snap := snapshot{}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
	}

	topics, err := s.adm.ListTopics(s.ctx) // internal topics are the coordinators' own state
	must(err)
	starts, err := s.adm.ListStartOffsets(s.ctx, topics.Names()...)
	must(err)
	ends, err := s.adm.ListEndOffsets(s.ctx, topics.Names()...)
	must(err)
	for _, td := range topics.Sorted() {
		snap["topic "+td.Topic] = fmt.Sprintf("%d partitions", len(td.Partitions))
		for p := range int32(len(td.Partitions)) {
			start, _ := starts.Lookup(td.Topic, p)
			end, _ := ends.Lookup(td.Topic, p)
			must(errors.Join(start.Err, end.Err))
			snap[fmt.Sprintf("partition %s/%d", td.Topic, p)] = fmt.Sprintf("start %d end %d", start.Offset, end.Offset)
		}
	}

	// Configs: those set on each resource itself.
	req := kmsg.NewPtrDescribeConfigsRequest()
	add := func(typ kmsg.ConfigResourceType, name string) {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		req.Resources = append(req.Resources, r)
	}
	for _, name := range topics.Names() {
		add(kmsg.ConfigResourceTypeTopic, name)
	}
	for _, name := range permGroups {
		add(kmsg.ConfigResourceTypeGroupConfig, name)
	}
	add(kmsg.ConfigResourceTypeBroker, "")
	add(kmsg.ConfigResourceTypeBroker, s.node)
	own := map[kmsg.ConfigResourceType]kmsg.ConfigSource{
		kmsg.ConfigResourceTypeTopic:       kmsg.ConfigSourceDynamicTopicConfig,
		kmsg.ConfigResourceTypeGroupConfig: kmsg.ConfigSourceGroupConfig,
	}
	configs, err := req.RequestWith(s.ctx, s.su)
	must(err)
	for _, r := range configs.Resources {
		must(kerr.ErrorForCode(r.ErrorCode))
		source, ok := own[r.ResourceType]
		if !ok && r.ResourceName == "" {
			source = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		} else if !ok {
			source = kmsg.ConfigSourceDynamicBrokerConfig
		}
		for _, c := range r.Configs {
			if c.Source == source {
				snap[fmt.Sprintf("%s %q config %s", r.ResourceType, r.ResourceName, c.Name)] = *c.Value
			}
		}
	}

	groups, err := s.adm.ListGroups(s.ctx)
	must(err)
	for _, g := range groups.Groups() {
		snap["group "+g] = groups[g].State
		offsets, err := s.adm.FetchOffsets(s.ctx, g)
		must(errors.Join(err, offsets.Error()))
		offsets.Each(func(o kadm.OffsetResponse) {
			snap[fmt.Sprintf("group %s offset %s/%d", g, o.Topic, o.Partition)] = strconv.FormatInt(o.At, 10)
		})
	}

	acls, err := s.adm.DescribeACLs(s.ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	must(err)
	for _, r := range acls {
		must(r.Err)
		for _, d := range r.Described {
			snap[fmt.Sprintf("acl %s %s %s %s %s %s %s", d.Principal, d.Host, d.Permission, d.Operation, d.Type, d.Pattern, d.Name)] = ""
		}
	}

	users, err := s.adm.DescribeUserSCRAMs(s.ctx)
	must(err)
	for _, u := range users {
		must(u.Err)
		for _, c := range u.CredInfos {
			snap[fmt.Sprintf("user %s %s", u.User, c.Mechanism)] = fmt.Sprintf("%d iterations", c.Iterations)
		}
	}

	quotas, err := s.adm.DescribeClientQuotas(s.ctx, false, nil)
	must(err)
	for _, q := range quotas {
		for _, v := range q.Values {
			snap[fmt.Sprintf("quota %v %s", q.Entity, v.Key)] = strconv.FormatFloat(v.Value, 'f', -1, 64)
		}
	}

	txns, err := s.adm.ListTransactions(s.ctx, nil, nil)
	must(err)
	described, err := s.adm.DescribeTransactions(s.ctx, slices.Collect(maps.Keys(txns))...)
	must(err)
	for _, d := range described.Sorted() {
		must(d.Err)
		snap["txn "+d.TxnID] = fmt.Sprintf("%s epoch %d partitions %v", d.State, d.ProducerEpoch, d.Topics)
	}
	return snap
}

// checkSnapshot: after differs from before by the (e) stages' effects,
// exactly; the other stages changed nothing.
func (s *permSuite) checkSnapshot(t *testing.T, before, after snapshot) {
	want := maps.Clone(before)
	for _, c := range []struct{ thing, state string }{
		{"partition perm-t/0", "start 0 end 4"},                                        // 0 Produce: one record after the setup's 3
		{"group perm-g offset perm-t/0", "2"},                                          // 8 OffsetCommit
		{"topic perm-19-created", "1 partitions"},                                      // 19 CreateTopics
		{"partition perm-19-created/0", "start 0 end 0"},                               // 19 CreateTopics
		{"partition perm-21-records/0", "start 1 end 2"},                               // 21 DeleteRecords
		{"txn perm-22-init", "Empty epoch 0 partitions map[]"},                         // 22 InitProducerId
		{"partition perm-27-markers/0", "start 0 end 1"},                               // 27 WriteTxnMarkers: an abort marker
		{"acl User:carol * ALLOW READ TOPIC LITERAL perm-30-carol", ""},                // 30 CreateAcls
		{`TOPIC "perm-33-alter" config retention.ms`, "3600000"},                       // 33 AlterConfigs
		{`GROUP_CONFIG "perm-33-alter" config consumer.session.timeout.ms`, "50000"},   // 33 AlterConfigs
		{`BROKER "" config log.retention.ms`, "604800001"},                             // 33 AlterConfigs
		{"topic perm-37-grow", "2 partitions"},                                         // 37 CreatePartitions
		{"partition perm-37-grow/1", "start 0 end 0"},                                  // 37 CreatePartitions
		{`TOPIC "perm-44-alter" config retention.ms`, "7200000"},                       // 44 IncrementalAlterConfigs
		{`GROUP_CONFIG "perm-44-alter" config consumer.heartbeat.interval.ms`, "6000"}, // 44 IncrementalAlterConfigs
		{fmt.Sprintf(`BROKER %q config log.retention.ms`, s.node), "604800002"},        // 44 IncrementalAlterConfigs
		{"quota {user=perm-49-quota} producer_byte_rate", "1048576"},                   // 49 AlterClientQuotas
		{"user perm-51-scram SCRAM-SHA-256", "4096 iterations"},                        // 51 AlterUserScramCredentials
	} {
		if state, ok := before[c.thing]; ok && state == c.state {
			t.Errorf("%s: %q before already: the change expected is none", c.thing, state)
		}
		want[c.thing] = c.state
	}
	for _, gone := range []string{
		"topic perm-20-deleted", "partition perm-20-deleted/0", // 20 DeleteTopics
		"acl User:dave * ALLOW READ TOPIC LITERAL perm-31-dave",          // 31 DeleteAcls
		"group perm-42-deleted", "group perm-42-deleted offset perm-t/0", // 42 DeleteGroups
		"group perm-47-offsets offset perm-t/0", // 47 OffsetDelete
	} {
		if _, ok := before[gone]; !ok {
			t.Errorf("%s: not there before: the change expected is none", gone)
		}
		delete(want, gone)
	}
	things := slices.AppendSeq(slices.Collect(maps.Keys(want)), maps.Keys(after))
	slices.Sort(things)
	for _, thing := range slices.Compact(things) {
		w, wok := want[thing]
		a, aok := after[thing]
		if w != a || wok != aok {
			t.Errorf("%s: %q (%v) after, want %q (%v); before %q", thing, a, aok, w, wok, before[thing])
		}
	}
}
