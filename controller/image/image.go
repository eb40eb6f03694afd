package image

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/skeinlog/skein/security"
)

// TopicID is a topic's UUID, as Kafka sends it (Metadata v10+, Fetch v13+).
type TopicID [16]byte

// IsZero reports whether the id is unset.
func (id TopicID) IsZero() bool { return id == TopicID{} }

func (id TopicID) String() string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
}

// Image is a node's picture of the cluster's metadata at one offset of the
// metadata log. An Image never changes: Apply returns a new one that shares
// what did not change, so readers can hold one without locks.
type Image struct {
	// Offset is the metadata log offset of the last record applied, -1 for
	// the empty image.
	Offset    int64
	ClusterID string
	Brokers   map[int32]Broker
	// Topics by name and by id; both hold the same *Topic values.
	Topics     map[string]*Topic
	TopicsByID map[TopicID]*Topic
	// BrokerConfigs are dynamic broker-level configs set with AlterConfigs
	// (Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG), by name.
	BrokerConfigs map[string]string
	// PerBrokerConfigs are dynamic configs set for one broker, by its id
	// and then name (Kafka's DYNAMIC_BROKER_CONFIG). The inner maps are
	// never changed in place.
	PerBrokerConfigs map[int32]map[string]string
	// GroupConfigs are configs set on a group resource (KIP-848's
	// consumer.session.timeout.ms and consumer.heartbeat.interval.ms), by
	// group id and then name; a group need not exist to have them. The
	// inner maps are never changed in place.
	GroupConfigs map[string]map[string]string
	// NextProducerID is the first producer id not yet handed out in a
	// block: ids below it are never given out again, even after restarts.
	NextProducerID int64
	// Extensions are the extension instances, by name. The values are
	// shared between images: a record that changes one replaces it.
	Extensions map[string]*Extension
	// Scram are the users' SCRAM credentials, by user and then mechanism
	// (SCRAM-SHA-256, SCRAM-SHA-512). The inner maps are never changed in
	// place.
	Scram map[string]map[string]ScramCredential
	// ACLs are the cluster's access control entries; ACLVersion is the
	// offset of the last record that changed them, which tells an
	// authorizer when to index them again.
	ACLs       map[security.ACL]struct{}
	ACLVersion int64
	// ClientQuotas are the client quotas, by entity and then key
	// (producer_byte_rate ...). The inner maps are never changed in place.
	ClientQuotas map[QuotaEntity]map[string]float64
	// Features are the feature levels FeatureLevel records finalized, by
	// name, a level of 0 included (the feature turned off); a feature
	// with no record has its level from before feature levels
	// (features.go). Read them with FeatureLevel.
	Features map[string]int16
}

// QuotaEntity names whom a client quota applies to (Kafka's
// ClientQuotaEntity): a user, a client id, both, or an IP address.
type QuotaEntity struct {
	User, ClientID, IP QuotaName
}

// QuotaName is one part of a quota entity: absent, a name, or the
// default (Kafka's <default>, a null name), which applies to each user,
// client id or address that has no quota of its own.
type QuotaName struct {
	Present bool   `msgpack:"p"`
	Default bool   `msgpack:"d"`
	Name    string `msgpack:"n"`
}

// String writes the entity as kafka-configs names it:
// "user=alice,client-id=<default>".
func (e QuotaEntity) String() string {
	var parts []string
	for _, p := range []struct {
		typ string
		n   QuotaName
	}{{"user", e.User}, {"client-id", e.ClientID}, {"ip", e.IP}} {
		switch {
		case !p.n.Present:
		case p.n.Default:
			parts = append(parts, p.typ+"=<default>")
		default:
			parts = append(parts, p.typ+"="+p.n.Name)
		}
	}
	return strings.Join(parts, ",")
}

// Named and DefaultName are the names of a quota entity's parts.
func Named(name string) QuotaName { return QuotaName{Present: true, Name: name} }

// DefaultName is the default of a quota entity's part.
var DefaultName = QuotaName{Present: true, Default: true}

// ACLSet returns the image's ACLs for an authorizer.
func (im *Image) ACLSet() security.ACLSet {
	return security.ACLSet{Version: im.ACLVersion, ACLs: im.ACLs}
}

// ScramCredential is what a SCRAM server keeps of a password (RFC 5802):
// the salt, the iterations and the keys derived from the salted password.
type ScramCredential struct {
	Salt, StoredKey, ServerKey []byte
	Iterations                 int32
}

// Broker is a registered broker.
type Broker struct {
	ID int32
	// Host and Port are the inter-broker listener's advertised address,
	// which followers fetch from.
	Host string
	Port int32
	// Listeners are the broker's Kafka listeners as advertised: a client
	// is told the brokers' addresses on the listener it connected to.
	Listeners []Endpoint
	Rack      string
	// ClusterAddr is the broker's remoting address (cluster.advertise).
	ClusterAddr string
	// Incarnation tells the broker's runs apart: a restarted broker
	// registers again with a new one.
	Incarnation uint64
	// Fenced is set when the broker missed its heartbeats for a session
	// timeout: it leads nothing and clients are not told of it.
	Fenced bool
	// Features are the feature levels the broker's binary supports, by
	// name; nil for a broker registered by a Skein before feature levels
	// (SupportedFeatures says what that one supports). A level outside a
	// live broker's range is never finalized.
	Features map[string]VersionRange
}

// Endpoint is one Kafka listener of a broker.
type Endpoint struct {
	Name     string `msgpack:"name"` // upper case, as Kafka normalises it
	Host     string `msgpack:"host"`
	Port     int32  `msgpack:"port"`
	Protocol string `msgpack:"proto"` // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

// Endpoint returns the address of the broker's listener of that name; ok
// is false when it has none. A broker registered without listeners (by a
// Skein before them) has its one address on every listener.
func (b Broker) Endpoint(listener string) (host string, port int32, ok bool) {
	if len(b.Listeners) == 0 {
		return b.Host, b.Port, true
	}
	for _, e := range b.Listeners {
		if e.Name == listener {
			return e.Host, e.Port, true
		}
	}
	return "", 0, false
}

// Record returns the record that registers b.
func (b Broker) Record() *RegisterBroker {
	return &RegisterBroker{ID: b.ID, Host: b.Host, Port: b.Port, Listeners: slices.Clone(b.Listeners), Rack: b.Rack,
		ClusterAddr: b.ClusterAddr, Incarnation: b.Incarnation, Features: maps.Clone(b.Features)}
}

// SameAddresses reports whether a and b are reached alike: addresses,
// listeners and rack.
func SameAddresses(a, b Broker) bool {
	return a.Host == b.Host && a.Port == b.Port && slices.Equal(a.Listeners, b.Listeners) && a.Rack == b.Rack && a.ClusterAddr == b.ClusterAddr
}

// LiveBrokerIDs returns the ids of the brokers not fenced, sorted.
func (im *Image) LiveBrokerIDs() []int32 {
	var ids []int32
	for _, id := range im.BrokerIDs() {
		if !im.Brokers[id].Fenced {
			ids = append(ids, id)
		}
	}
	return ids
}

// Topic is one topic. Treat it as read-only.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions []Partition
	// Configs are the topic's own configs (overrides of the broker's), by
	// Kafka name.
	Configs  map[string]string
	Internal bool
}

// Partition is one partition's placement and leadership.
type Partition struct {
	Index       int32
	Leader      int32 // -1 when there is none
	LeaderEpoch int32
	// PartitionEpoch counts every change to this partition's record.
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// Adding and Removing are the replicas a reassignment in progress
	// adds and removes: Replicas holds both (the target first); once every
	// adding replica is in the ISR, the removing ones go.
	Adding   []int32 `msgpack:",omitempty"`
	Removing []int32 `msgpack:",omitempty"`
	// ELR are the eligible leader replicas (KIP-966): replicas out of the
	// ISR that still hold every committed record, because they left it
	// only when it shrank below min.insync.replicas, and so may lead.
	// LastKnownELR are the ELR members fenced while the ISR was empty,
	// kept for an operator's unclean recovery.
	ELR          []int32 `msgpack:",omitempty"`
	LastKnownELR []int32 `msgpack:",omitempty"`
}

// Extension is an extension instance: a name, the kind of extension it
// runs (a kind registered in the binary, package extension) and its
// settings as they were given, without the kind's defaults (which the
// runtime fills in, so that a new default reaches instances that left the
// setting alone). Treat it as read-only.
type Extension struct {
	Name     string            `msgpack:"name"`
	Kind     string            `msgpack:"kind"`
	Settings map[string]string `msgpack:"settings"`
}

// Equal reports whether e and o define the same instance. A nil and an
// empty Settings are the same.
func (e *Extension) Equal(o *Extension) bool {
	return e.Name == o.Name && e.Kind == o.Kind && maps.Equal(e.Settings, o.Settings)
}

// Empty returns the image before any record.
func Empty() *Image {
	return &Image{
		Offset:           -1,
		Brokers:          map[int32]Broker{},
		Topics:           map[string]*Topic{},
		TopicsByID:       map[TopicID]*Topic{},
		BrokerConfigs:    map[string]string{},
		PerBrokerConfigs: map[int32]map[string]string{},
		GroupConfigs:     map[string]map[string]string{},
		Extensions:       map[string]*Extension{},
		Scram:            map[string]map[string]ScramCredential{},
		ACLs:             map[security.ACL]struct{}{},
		ACLVersion:       -1,
		ClientQuotas:     map[QuotaEntity]map[string]float64{},
		Features:         map[string]int16{},
	}
}

// Topic returns the named topic, or nil.
func (im *Image) Topic(name string) *Topic { return im.Topics[name] }

// TopicNames returns the topic names, sorted.
func (im *Image) TopicNames() []string {
	names := slices.Collect(maps.Keys(im.Topics))
	sort.Strings(names)
	return names
}

// ExtensionNames returns the names of the extension instances, sorted.
func (im *Image) ExtensionNames() []string {
	return slices.Sorted(maps.Keys(im.Extensions))
}

// BrokerIDs returns the broker ids, sorted.
func (im *Image) BrokerIDs() []int32 {
	ids := slices.Collect(maps.Keys(im.Brokers))
	slices.Sort(ids)
	return ids
}

// clone returns a shallow copy whose maps can be changed without touching
// im. Topics and extensions themselves are shared; a record that changes
// one replaces it.
func (im *Image) clone() *Image {
	c := *im
	c.Brokers = maps.Clone(im.Brokers)
	c.Topics = maps.Clone(im.Topics)
	c.TopicsByID = maps.Clone(im.TopicsByID)
	c.BrokerConfigs = maps.Clone(im.BrokerConfigs)
	c.PerBrokerConfigs = maps.Clone(im.PerBrokerConfigs)
	c.GroupConfigs = maps.Clone(im.GroupConfigs)
	c.Extensions = maps.Clone(im.Extensions)
	c.Scram = maps.Clone(im.Scram)
	c.ACLs = maps.Clone(im.ACLs)
	c.ClientQuotas = maps.Clone(im.ClientQuotas)
	c.Features = maps.Clone(im.Features)
	return &c
}

func (im *Image) putTopic(t *Topic) {
	if old, ok := im.TopicsByID[t.ID]; ok && old.Name != t.Name {
		delete(im.Topics, old.Name)
	}
	im.Topics[t.Name] = t
	im.TopicsByID[t.ID] = t
}

func (t *Topic) clone() *Topic {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	c.Configs = maps.Clone(t.Configs)
	return &c
}
