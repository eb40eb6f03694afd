package image

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/skeinlog/skein/security"
)

// Record is one change to the metadata: the controller writes records to
// the metadata log, and every node applies them in log order. Records are
// plain structs with msgpack tags, encoded by the controller; their type ids
// (RecordType) are stable forever, since logs outlive binaries.
type Record interface {
	// Type returns the record's stable type id.
	Type() RecordType
	// apply changes im (a clone the caller owns) or returns why the record
	// cannot apply.
	apply(im *Image) error
}

// RecordType identifies a record type in the metadata log.
type RecordType uint16

// Record type ids. Never renumber; add at the end.
const (
	TypeCluster RecordType = iota + 1
	TypeRegisterBroker
	TypeCreateTopic
	TypeDeleteTopic
	TypeAddPartitions
	TypeSetConfigs
	TypeAllocateProducerIDs
	TypeChangePartition
	TypeFenceBroker
	TypeSetExtension
	TypeDeleteExtension
	TypeSetScram
	TypeDeleteScram
	TypeCreateACL
	TypeDeleteACL
	TypeSetClientQuota
	TypeFeatureLevel
	TypeUnregisterBroker
)

// New returns an empty record of type t, for decoding, or nil for a type
// this binary does not know.
func New(t RecordType) Record {
	switch t {
	case TypeCluster:
		return &Cluster{}
	case TypeRegisterBroker:
		return &RegisterBroker{}
	case TypeCreateTopic:
		return &CreateTopic{}
	case TypeDeleteTopic:
		return &DeleteTopic{}
	case TypeAddPartitions:
		return &AddPartitions{}
	case TypeSetConfigs:
		return &SetConfigs{}
	case TypeAllocateProducerIDs:
		return &AllocateProducerIDs{}
	case TypeChangePartition:
		return &ChangePartition{}
	case TypeFenceBroker:
		return &FenceBroker{}
	case TypeSetExtension:
		return &SetExtension{}
	case TypeDeleteExtension:
		return &DeleteExtension{}
	case TypeSetScram:
		return &SetScram{}
	case TypeDeleteScram:
		return &DeleteScram{}
	case TypeCreateACL:
		return &CreateACL{}
	case TypeDeleteACL:
		return &DeleteACL{}
	case TypeSetClientQuota:
		return &SetClientQuota{}
	case TypeFeatureLevel:
		return &FeatureLevel{}
	case TypeUnregisterBroker:
		return &UnregisterBroker{}
	}
	return nil
}

// ErrConflict is returned by Apply for a record that contradicts the image
// (a topic that exists already, an id that does not). The controller
// validates before writing, so a conflict in the log is a bug or corruption.
var ErrConflict = errors.New("image: record conflicts with the image")

// Apply returns the image with r applied at log offset offset. im is not
// changed.
func (im *Image) Apply(offset int64, r Record) (*Image, error) {
	c := im.clone()
	if err := r.apply(c); err != nil {
		return nil, fmt.Errorf("%w: %T at offset %d: %v", ErrConflict, r, offset, err)
	}
	c.Offset = offset
	switch r.(type) {
	case *CreateACL, *DeleteACL:
		c.ACLVersion = offset
	}
	return c, nil
}

// Cluster names the cluster; it is the first record of a new metadata log.
type Cluster struct {
	ClusterID string `msgpack:"id"`
}

func (*Cluster) Type() RecordType { return TypeCluster }
func (r *Cluster) apply(im *Image) error {
	im.ClusterID = r.ClusterID
	return nil
}

// RegisterBroker adds a broker, or replaces its registration (a new
// incarnation, new addresses), unfenced.
type RegisterBroker struct {
	ID          int32      `msgpack:"id"`
	Host        string     `msgpack:"host"`
	Port        int32      `msgpack:"port"`
	Listeners   []Endpoint `msgpack:"listeners,omitempty"`
	Rack        string     `msgpack:"rack"`
	ClusterAddr string     `msgpack:"cluster"`
	Incarnation uint64     `msgpack:"inc"`
	// Features are the levels the broker supports; absent from a
	// registration by a Skein before feature levels.
	Features map[string]VersionRange `msgpack:"features,omitempty"`
}

func (*RegisterBroker) Type() RecordType { return TypeRegisterBroker }
func (r *RegisterBroker) apply(im *Image) error {
	im.Brokers[r.ID] = Broker{ID: r.ID, Host: r.Host, Port: r.Port, Listeners: slices.Clone(r.Listeners), Rack: r.Rack,
		ClusterAddr: r.ClusterAddr, Incarnation: r.Incarnation, Features: maps.Clone(r.Features)}
	return nil
}

// UnregisterBroker removes a broker's registration (Kafka's
// UnregisterBrokerRecord): UnregisterBroker (64) for a broker that is gone
// for good. The controller takes it out of every ISR and leadership in
// ChangePartition records of the same entry; a node of that id that runs
// again registers again.
type UnregisterBroker struct {
	ID          int32  `msgpack:"id"`
	Incarnation uint64 `msgpack:"inc"`
}

func (*UnregisterBroker) Type() RecordType { return TypeUnregisterBroker }
func (r *UnregisterBroker) apply(im *Image) error {
	b, ok := im.Brokers[r.ID]
	if !ok || b.Incarnation != r.Incarnation {
		return fmt.Errorf("no broker %d of incarnation %d", r.ID, r.Incarnation)
	}
	delete(im.Brokers, r.ID)
	return nil
}

// FeatureLevel finalizes a feature at a level (Kafka's
// FeatureLevelRecord); level 0 turns the feature off. The controller
// checks the level against every live broker's supported range first.
type FeatureLevel struct {
	Name  string `msgpack:"name"`
	Level int16  `msgpack:"level"`
}

func (*FeatureLevel) Type() RecordType { return TypeFeatureLevel }
func (r *FeatureLevel) apply(im *Image) error {
	if r.Name == "" || r.Level < 0 {
		return fmt.Errorf("feature %q level %d", r.Name, r.Level)
	}
	// NB: a level of 0 is kept, not deleted: an absent feature has its
	// level from before feature levels, which may be above 0.
	im.Features[r.Name] = r.Level
	return nil
}

// FenceBroker fences a broker's incarnation (it missed its heartbeats) or
// unfences it (it heartbeats again). The controller moves the leadership
// of its partitions in ChangePartition records of the same entry.
type FenceBroker struct {
	ID          int32  `msgpack:"id"`
	Incarnation uint64 `msgpack:"inc"`
	Fenced      bool   `msgpack:"fenced"`
}

func (*FenceBroker) Type() RecordType { return TypeFenceBroker }
func (r *FenceBroker) apply(im *Image) error {
	b, ok := im.Brokers[r.ID]
	if !ok || b.Incarnation != r.Incarnation {
		return fmt.Errorf("no broker %d of incarnation %d", r.ID, r.Incarnation)
	}
	b.Fenced = r.Fenced
	im.Brokers[r.ID] = b
	return nil
}

// CreateTopic adds a topic with its partitions and configs.
type CreateTopic struct {
	Name       string            `msgpack:"name"`
	ID         TopicID           `msgpack:"id"`
	Partitions []Partition       `msgpack:"parts"`
	Configs    map[string]string `msgpack:"configs"`
	Internal   bool              `msgpack:"internal"`
}

func (*CreateTopic) Type() RecordType { return TypeCreateTopic }
func (r *CreateTopic) apply(im *Image) error {
	if _, ok := im.Topics[r.Name]; ok {
		return fmt.Errorf("topic %q exists", r.Name)
	}
	if _, ok := im.TopicsByID[r.ID]; ok || r.ID.IsZero() {
		return fmt.Errorf("topic id %v is taken or zero", r.ID)
	}
	im.putTopic(&Topic{Name: r.Name, ID: r.ID, Partitions: slices.Clone(r.Partitions), Configs: maps.Clone(r.Configs), Internal: r.Internal})
	return nil
}

// DeleteTopic removes a topic.
type DeleteTopic struct {
	ID TopicID `msgpack:"id"`
}

func (*DeleteTopic) Type() RecordType { return TypeDeleteTopic }
func (r *DeleteTopic) apply(im *Image) error {
	t, ok := im.TopicsByID[r.ID]
	if !ok {
		return fmt.Errorf("no topic %v", r.ID)
	}
	delete(im.TopicsByID, r.ID)
	delete(im.Topics, t.Name)
	return nil
}

// AddPartitions appends partitions to a topic (CreatePartitions).
type AddPartitions struct {
	ID         TopicID     `msgpack:"id"`
	Partitions []Partition `msgpack:"parts"`
}

func (*AddPartitions) Type() RecordType { return TypeAddPartitions }
func (r *AddPartitions) apply(im *Image) error {
	t, ok := im.TopicsByID[r.ID]
	if !ok {
		return fmt.Errorf("no topic %v", r.ID)
	}
	t = t.clone()
	for _, p := range r.Partitions {
		if int(p.Index) != len(t.Partitions) {
			return fmt.Errorf("partition %d added after %d", p.Index, len(t.Partitions))
		}
		t.Partitions = append(t.Partitions, p)
	}
	im.putTopic(t)
	return nil
}

// ChangePartition replaces one partition's leadership and replica sets.
type ChangePartition struct {
	ID        TopicID   `msgpack:"id"`
	Partition Partition `msgpack:"part"`
}

func (*ChangePartition) Type() RecordType { return TypeChangePartition }
func (r *ChangePartition) apply(im *Image) error {
	t, ok := im.TopicsByID[r.ID]
	if !ok || int(r.Partition.Index) >= len(t.Partitions) {
		return fmt.Errorf("no partition %v/%d", r.ID, r.Partition.Index)
	}
	t = t.clone()
	t.Partitions[r.Partition.Index] = r.Partition
	im.putTopic(t)
	return nil
}

// ResourceType is what a SetConfigs record configures, with Kafka's
// ConfigResource type ids.
type ResourceType int8

// The resource types configs can be set on.
const (
	ResourceTopic  ResourceType = 2
	ResourceBroker ResourceType = 4
	ResourceGroup  ResourceType = 32
)

// SetConfigs sets (or, with a nil value, deletes) configs of a topic, of
// the brokers or of a group. Values are validated by the controller before
// writing.
type SetConfigs struct {
	Resource ResourceType       `msgpack:"res"`
	Name     string             `msgpack:"name"` // topic name or group id; for brokers a broker id, or empty for the cluster-wide default
	Configs  map[string]*string `msgpack:"configs"`
}

func (*SetConfigs) Type() RecordType { return TypeSetConfigs }
func (r *SetConfigs) apply(im *Image) error {
	set := func(m map[string]string) {
		for k, v := range r.Configs {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = *v
			}
		}
	}
	switch r.Resource {
	case ResourceTopic:
		t, ok := im.Topics[r.Name]
		if !ok {
			return fmt.Errorf("no topic %q", r.Name)
		}
		t = t.clone()
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		set(t.Configs)
		im.putTopic(t)
	case ResourceBroker:
		if r.Name == "" {
			set(im.BrokerConfigs)
			break
		}
		id, err := strconv.ParseInt(r.Name, 10, 32)
		if err != nil {
			return fmt.Errorf("broker name %q", r.Name)
		}
		m := maps.Clone(im.PerBrokerConfigs[int32(id)])
		if m == nil {
			m = map[string]string{}
		}
		set(m)
		if len(m) == 0 {
			delete(im.PerBrokerConfigs, int32(id))
		} else {
			im.PerBrokerConfigs[int32(id)] = m
		}
	case ResourceGroup:
		m := maps.Clone(im.GroupConfigs[r.Name])
		if m == nil {
			m = map[string]string{}
		}
		set(m)
		if len(m) == 0 {
			delete(im.GroupConfigs, r.Name)
		} else {
			im.GroupConfigs[r.Name] = m
		}
	default:
		return fmt.Errorf("resource type %d", r.Resource)
	}
	return nil
}

// AllocateProducerIDs hands out the block of producer ids [First, First+Size).
type AllocateProducerIDs struct {
	First int64 `msgpack:"first"`
	Size  int64 `msgpack:"size"`
}

func (*AllocateProducerIDs) Type() RecordType { return TypeAllocateProducerIDs }
func (r *AllocateProducerIDs) apply(im *Image) error {
	if r.First < im.NextProducerID || r.Size <= 0 {
		return fmt.Errorf("block at %d below the next id %d", r.First, im.NextProducerID)
	}
	im.NextProducerID = r.First + r.Size
	return nil
}

// SetExtension creates an extension instance, or replaces the one of the
// same name. The controller has checked the name and that the kind is
// given; whether this binary knows the kind is the runtime's concern (a
// node of another build may).
type SetExtension struct {
	Extension Extension `msgpack:"ext"`
}

func (*SetExtension) Type() RecordType { return TypeSetExtension }
func (r *SetExtension) apply(im *Image) error {
	if r.Extension.Name == "" {
		return errors.New("extension without a name")
	}
	e := r.Extension
	e.Settings = maps.Clone(e.Settings)
	im.Extensions[e.Name] = &e
	return nil
}

// DeleteExtension removes an extension instance.
type DeleteExtension struct {
	Name string `msgpack:"name"`
}

func (*DeleteExtension) Type() RecordType { return TypeDeleteExtension }
func (r *DeleteExtension) apply(im *Image) error {
	if _, ok := im.Extensions[r.Name]; !ok {
		return fmt.Errorf("no extension %q", r.Name)
	}
	delete(im.Extensions, r.Name)
	return nil
}

// SetScram sets a user's SCRAM credential of one mechanism (Kafka's
// UserScramCredentialRecord): the salt, the iterations and the keys
// derived from the salted password, never the password.
type SetScram struct {
	User       string `msgpack:"user"`
	Mechanism  string `msgpack:"mech"` // SCRAM-SHA-256 or SCRAM-SHA-512
	Salt       []byte `msgpack:"salt"`
	StoredKey  []byte `msgpack:"stored"`
	ServerKey  []byte `msgpack:"server"`
	Iterations int32  `msgpack:"iter"`
}

func (*SetScram) Type() RecordType { return TypeSetScram }
func (r *SetScram) apply(im *Image) error {
	creds := maps.Clone(im.Scram[r.User])
	if creds == nil {
		creds = map[string]ScramCredential{}
	}
	creds[r.Mechanism] = ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
	im.Scram[r.User] = creds
	return nil
}

// DeleteScram removes a user's SCRAM credential of one mechanism.
type DeleteScram struct {
	User      string `msgpack:"user"`
	Mechanism string `msgpack:"mech"`
}

func (*DeleteScram) Type() RecordType { return TypeDeleteScram }
func (r *DeleteScram) apply(im *Image) error {
	if _, ok := im.Scram[r.User][r.Mechanism]; !ok {
		return fmt.Errorf("no %s credential for user %q", r.Mechanism, r.User)
	}
	creds := maps.Clone(im.Scram[r.User])
	delete(creds, r.Mechanism)
	if len(creds) == 0 {
		delete(im.Scram, r.User)
	} else {
		im.Scram[r.User] = creds
	}
	return nil
}

// CreateACL adds an ACL (Kafka's AccessControlEntryRecord); one equal to
// an ACL the image has is a conflict, since the controller adds each once.
type CreateACL struct {
	ACL security.ACL `msgpack:"acl"`
}

func (*CreateACL) Type() RecordType { return TypeCreateACL }
func (r *CreateACL) apply(im *Image) error {
	if _, ok := im.ACLs[r.ACL]; ok {
		return fmt.Errorf("ACL exists: %s", r.ACL)
	}
	im.ACLs[r.ACL] = struct{}{}
	return nil
}

// DeleteACL removes an ACL (Kafka's RemoveAccessControlEntryRecord).
type DeleteACL struct {
	ACL security.ACL `msgpack:"acl"`
}

func (*DeleteACL) Type() RecordType { return TypeDeleteACL }
func (r *DeleteACL) apply(im *Image) error {
	if _, ok := im.ACLs[r.ACL]; !ok {
		return fmt.Errorf("no ACL %s", r.ACL)
	}
	delete(im.ACLs, r.ACL)
	return nil
}

// SetClientQuota sets or removes one quota of an entity (Kafka's
// ClientQuotaRecord).
type SetClientQuota struct {
	Entity QuotaEntity `msgpack:"e"`
	Key    string      `msgpack:"k"`
	Value  float64     `msgpack:"v"`
	Remove bool        `msgpack:"rm,omitempty"`
}

func (*SetClientQuota) Type() RecordType { return TypeSetClientQuota }
func (r *SetClientQuota) apply(im *Image) error {
	q := maps.Clone(im.ClientQuotas[r.Entity])
	if q == nil {
		q = map[string]float64{}
	}
	if r.Remove {
		delete(q, r.Key)
	} else {
		q[r.Key] = r.Value
	}
	if len(q) == 0 {
		delete(im.ClientQuotas, r.Entity)
	} else {
		im.ClientQuotas[r.Entity] = q
	}
	return nil
}
