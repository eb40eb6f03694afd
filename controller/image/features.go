package image

import (
	"maps"
	"slices"
)

// Feature levels (KIP-584): each feature's finalized level is what the
// cluster has turned on, the same on every node, changed only through the
// metadata log (FeatureLevel records that UpdateFeatures writes), so that
// a rolling upgrade turns a feature on once every broker supports it.
// The features are Kafka 4.2's (Feature, MetadataVersion), those whose
// behaviour Skein has:
//
//   - metadata.version: Kafka's metadata log format. Skein's metadata log
//     is its own and no client reads it, so the level gates nothing in
//     Skein; it is kept and changed with Kafka's rules so that Kafka's
//     tools (kafka-features --release-version) work as against Kafka.
//   - transaction.version: 2 is KIP-890 part 2 (Produce v12+ adds the
//     partition to the transaction, EndTxn v5+ bumps the epoch), which
//     Java clients turn on only when it is finalized.
//   - group.version: 1 is KIP-848's consumer group protocol.
//   - share.version: 1 is share groups (KIP-932).
//   - streams.version: 1 is streams groups (KIP-1071).
//
// Kafka's kraft.version (its dynamic quorum, KIP-853) and
// eligible.leader.replicas.version (KIP-966) are not Skein's to claim: a
// broker supports only level 0 of them, so they can never be finalized.

// The feature names, Kafka's.
const (
	MetadataVersion    = "metadata.version"
	TransactionVersion = "transaction.version"
	GroupVersion       = "group.version"
	ShareVersion       = "share.version"
	StreamsVersion     = "streams.version"
)

// VersionRange is a range of feature levels a broker supports.
type VersionRange struct {
	Min int16 `msgpack:"min"`
	Max int16 `msgpack:"max"`
}

// Contains reports whether level is in the range.
func (r VersionRange) Contains(level int16) bool { return r.Min <= level && level <= r.Max }

// The metadata.version levels of Kafka 4.2 (MetadataVersion): 7 is
// 3.3-IV3, the oldest Kafka 4 accepts, and 29 is 4.2-IV1, the newest in
// production, which a new Kafka 4.2 cluster starts at.
const (
	MinMetadataVersion    int16 = 7
	LatestMetadataVersion int16 = 29
)

// metadataChanged are the metadata.version levels whose metadata records
// differ from the level below (Kafka's didMetadataChange): a downgrade
// across one of them could lose metadata, which Kafka refuses.
var metadataChanged = map[int16]bool{7: true, 8: true, 11: true, 13: true, 14: true, 15: true, 17: true, 23: true}

// MetadataChanged reports whether metadata changed between two
// metadata.version levels (Kafka's MetadataVersion.checkIfMetadataChanged).
func MetadataChanged(from, to int16) bool {
	if from == to {
		return false
	}
	high, low := max(from, to), min(from, to)
	for v := high; v > low; v-- {
		if metadataChanged[v] {
			return true
		}
	}
	return false
}

// MetadataVersionName returns a metadata.version level's name as Kafka
// prints it ("4.2-IV1"), or "" for a level Kafka 4.2 does not know.
func MetadataVersionName(level int16) string {
	names := []string{7: "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
		"3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0", "4.0-IV0", "4.0-IV1",
		"4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1"}
	if level < 0 || int(level) >= len(names) {
		return ""
	}
	return names[level]
}

// SupportedFeatures returns the feature levels this build of Skein
// supports: what each node registers with the cluster and advertises in
// ApiVersions.
func SupportedFeatures() map[string]VersionRange {
	return map[string]VersionRange{
		MetadataVersion:    {MinMetadataVersion, LatestMetadataVersion},
		TransactionVersion: {0, 2},
		GroupVersion:       {0, 1},
		ShareVersion:       {0, 1},
		StreamsVersion:     {0, 1},
	}
}

// legacySupported is what a broker registered by a Skein before feature
// levels supports: the features that Skein advertised, at the levels it
// served, and every metadata.version, on which it gated nothing.
var legacySupported = map[string]VersionRange{
	MetadataVersion:    {MinMetadataVersion, LatestMetadataVersion},
	TransactionVersion: {0, 2},
	GroupVersion:       {0, 1},
	ShareVersion:       {0, 1},
	StreamsVersion:     {0, 1},
}

// DefaultFeatureLevels returns the levels a new cluster starts at: Kafka
// 4.2's defaults (every feature at its latest production level), which
// the controller that boots the cluster writes as FeatureLevel records.
func DefaultFeatureLevels() map[string]int16 {
	return map[string]int16{
		MetadataVersion:    LatestMetadataVersion,
		TransactionVersion: 2,
		GroupVersion:       1,
		ShareVersion:       1,
		StreamsVersion:     1,
	}
}

// legacyLevels are the levels of an image with no FeatureLevel record of
// a feature: a cluster made by a Skein before feature levels, whose
// features were fixed at these. They never change, so that a new release
// whose defaults differ changes nothing in an existing cluster.
var legacyLevels = map[string]int16{
	MetadataVersion:    LatestMetadataVersion,
	TransactionVersion: 2,
	GroupVersion:       1,
	ShareVersion:       1,
	StreamsVersion:     1,
}

// FeatureLevel returns the finalized level of a feature: 0 when it is off
// or unknown.
func (im *Image) FeatureLevel(name string) int16 {
	if l, ok := im.Features[name]; ok {
		return l
	}
	return legacyLevels[name]
}

// FinalizedFeatures returns every feature's finalized level above 0, as
// ApiVersions lists them (a feature at 0 is not finalized).
func (im *Image) FinalizedFeatures() map[string]int16 {
	out := map[string]int16{}
	for name := range legacyLevels {
		if l := im.FeatureLevel(name); l > 0 {
			out[name] = l
		}
	}
	for name, l := range im.Features {
		if l > 0 {
			out[name] = l
		}
	}
	return out
}

// SupportedFeatures returns the feature levels a broker supports: those
// it registered with, or, for a registration by a Skein before feature
// levels, the levels that Skein served.
func (b Broker) SupportedFeatures() map[string]VersionRange {
	if b.Features == nil {
		return maps.Clone(legacySupported)
	}
	return maps.Clone(b.Features)
}

// FeatureNames returns the names of the features with a level in the
// image or a default, sorted.
func (im *Image) FeatureNames() []string {
	names := map[string]bool{}
	for n := range legacyLevels {
		names[n] = true
	}
	for n := range im.Features {
		names[n] = true
	}
	return slices.Sorted(maps.Keys(names))
}
