package image

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinlog/skein/security"
)

// Records returns records that, applied in order to the empty image,
// rebuild im (all but its Offset): the content of a metadata snapshot.
func (im *Image) Records() []Record {
	var out []Record
	if im.ClusterID != "" {
		out = append(out, &Cluster{ClusterID: im.ClusterID})
	}
	for _, id := range im.BrokerIDs() {
		b := im.Brokers[id]
		out = append(out, b.Record())
		if b.Fenced {
			out = append(out, &FenceBroker{ID: b.ID, Incarnation: b.Incarnation, Fenced: true})
		}
	}
	for _, name := range im.TopicNames() {
		t := im.Topics[name]
		out = append(out, &CreateTopic{Name: t.Name, ID: t.ID, Partitions: slices.Clone(t.Partitions), Configs: maps.Clone(t.Configs), Internal: t.Internal})
	}
	if len(im.BrokerConfigs) > 0 {
		out = append(out, &SetConfigs{Resource: ResourceBroker, Configs: pointers(im.BrokerConfigs)})
	}
	for _, id := range slices.Sorted(maps.Keys(im.PerBrokerConfigs)) {
		out = append(out, &SetConfigs{Resource: ResourceBroker, Name: strconv.Itoa(int(id)), Configs: pointers(im.PerBrokerConfigs[id])})
	}
	for _, group := range slices.Sorted(maps.Keys(im.GroupConfigs)) {
		out = append(out, &SetConfigs{Resource: ResourceGroup, Name: group, Configs: pointers(im.GroupConfigs[group])})
	}
	if im.NextProducerID > 0 {
		out = append(out, &AllocateProducerIDs{First: 0, Size: im.NextProducerID})
	}
	// NB: a snapshot written before extensions existed has none of these
	// records, and rebuilds an image without extensions, as it should.
	for _, name := range im.ExtensionNames() {
		e := *im.Extensions[name]
		e.Settings = maps.Clone(e.Settings)
		out = append(out, &SetExtension{Extension: e})
	}
	for _, user := range slices.Sorted(maps.Keys(im.Scram)) {
		for _, mech := range slices.Sorted(maps.Keys(im.Scram[user])) {
			c := im.Scram[user][mech]
			out = append(out, &SetScram{User: user, Mechanism: mech, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations})
		}
	}
	entities := slices.Collect(maps.Keys(im.ClientQuotas))
	slices.SortFunc(entities, func(a, b QuotaEntity) int { return strings.Compare(a.String(), b.String()) })
	for _, e := range entities {
		for _, key := range slices.Sorted(maps.Keys(im.ClientQuotas[e])) {
			out = append(out, &SetClientQuota{Entity: e, Key: key, Value: im.ClientQuotas[e][key]})
		}
	}
	// NB: a snapshot of a cluster from before feature levels has no
	// FeatureLevel records and rebuilds its image with the levels of then.
	for _, name := range slices.Sorted(maps.Keys(im.Features)) {
		out = append(out, &FeatureLevel{Name: name, Level: im.Features[name]})
	}
	acls := slices.Collect(maps.Keys(im.ACLs))
	slices.SortFunc(acls, security.CompareACLs)
	for _, acl := range acls {
		out = append(out, &CreateACL{ACL: acl})
	}
	return out
}

func pointers(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}
