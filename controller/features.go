package controller

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// Feature levels and broker registrations that operators change:
// UpdateFeatures (57) and UnregisterBroker (64), decided as Kafka 4.2's
// QuorumController decides them (FeatureControlManager.updateFeatures,
// ReplicationControlManager.unregisterBroker), with its error codes and
// messages.

// The upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	UpgradeTypeUpgrade         int8 = 1
	UpgradeTypeSafeDowngrade   int8 = 2
	UpgradeTypeUnsafeDowngrade int8 = 3
)

// FeatureUpdate asks for one feature's new finalized level.
type FeatureUpdate struct {
	Name  string `msgpack:"name"`
	Level int16  `msgpack:"level"`
	Type  int8   `msgpack:"type"`
}

// UpdateFeatures changes finalized feature levels (UpdateFeatures): all
// of them or, at the first update refused, none.
type UpdateFeatures struct {
	Updates      []FeatureUpdate `msgpack:"updates"`
	ValidateOnly bool            `msgpack:"validate"`
}

// UpdateFeaturesResult answers UpdateFeatures: one error for the whole
// request, as Kafka answers it.
type UpdateFeaturesResult struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

func (*UpdateFeatures) kind() commandKind      { return kindUpdateFeatures }
func (*UpdateFeatures) timeout() time.Duration { return 0 }
func (*UpdateFeatures) newResult() any         { return &UpdateFeaturesResult{} }
func (*UpdateFeatures) failed(err *kerr.Error, msg string) any {
	return &UpdateFeaturesResult{Err: err, Message: msg}
}

func (m *UpdateFeatures) decide(c *Controller) (any, []image.Record) {
	var records []image.Record
	for _, u := range m.Updates {
		if msg := c.checkFeatureUpdate(u); msg != "" {
			return &UpdateFeaturesResult{Err: kerr.InvalidUpdateVersion,
				Message: "The update failed for all features since the following feature had an error: " + msg}, nil
		}
		records = append(records, &image.FeatureLevel{Name: u.Name, Level: u.Level})
	}
	if m.ValidateOnly {
		return &UpdateFeaturesResult{}, nil
	}
	return &UpdateFeaturesResult{}, records
}

// kafkaFeatures are the features Kafka 4.2 defines (Feature), but for
// metadata.version, which it handles apart, and those for its own tests.
var kafkaFeatures = map[string]bool{"kraft.version": true, image.TransactionVersion: true, image.GroupVersion: true,
	"eligible.leader.replicas.version": true, image.ShareVersion: true, image.StreamsVersion: true}

// checkFeatureUpdate returns why u cannot be made, in Kafka's words, or
// "" when it can.
func (c *Controller) checkFeatureUpdate(u FeatureUpdate) string {
	invalid := func(why string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", u.Level, u.Name, why)
	}
	if u.Type < UpgradeTypeUpgrade || u.Type > UpgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	current := c.head.FeatureLevel(u.Name)
	if u.Level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	if why := c.reasonNotSupported(u.Name, u.Level); why != "" {
		return invalid(why)
	}
	switch {
	case u.Level < current && u.Type == UpgradeTypeUpgrade:
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	case u.Level > current && u.Type != UpgradeTypeUpgrade:
		return invalid("Can't downgrade to a newer version.")
	}
	if u.Name != image.MetadataVersion && !kafkaFeatures[u.Name] {
		// Kafka's check of the feature's dependencies looks the feature
		// up first: a level of 0, which every node supports, of a
		// feature Kafka does not know ends here.
		return invalid("Feature " + u.Name + " not found.")
	}
	if u.Name == image.MetadataVersion && u.Level < current && image.MetadataChanged(current, u.Level) {
		// Skein gates nothing on metadata.version, but refuses what Kafka
		// refuses, so that Kafka's tools see the same cluster.
		why := "Refusing to perform the requested downgrade because it might delete metadata information."
		if u.Type == UpgradeTypeUnsafeDowngrade {
			why = "Unsafe metadata downgrade is not supported in this version."
		}
		return fmt.Sprintf("Unsupported metadata.version downgrade from %d to %d. %s", current, u.Level, why)
	}
	return ""
}

// reasonNotSupported returns why level cannot be finalized for the named
// feature: this controller's broker or a registered one, fenced or not
// (a broker gone for good is unregistered first, UnregisterBroker), does
// not support it. Kafka's QuorumFeatures.reasonNotSupported.
func (c *Controller) reasonNotSupported(name string, level int16) string {
	check := func(what string, supported map[string]image.VersionRange) string {
		r := supported[name] // absent: only 0, Kafka's DISABLED
		if r.Contains(level) {
			return ""
		}
		if r.Max == 0 {
			return what + " does not support this feature."
		}
		if r.Min == r.Max {
			return what + " only supports versions " + strconv.Itoa(int(r.Min))
		}
		return fmt.Sprintf("%s only supports versions %d-%d", what, r.Min, r.Max)
	}
	local := c.cfg.Broker.Features
	if local == nil {
		local = image.SupportedFeatures()
	}
	if why := check(fmt.Sprintf("Local controller %d", c.cfg.NodeID), local); why != "" {
		return why
	}
	for _, id := range c.head.BrokerIDs() {
		if why := check(fmt.Sprintf("Broker %d", id), c.head.Brokers[id].SupportedFeatures()); why != "" {
			return why
		}
	}
	return ""
}

// UnregisterBroker removes a broker's registration (UnregisterBroker),
// whatever its state, as Kafka does: it leaves every ISR it is in (unless
// it is a partition's last member) and leads nothing. A node of that id
// that is still running registers again at its next heartbeat.
type UnregisterBroker struct {
	ID int32 `msgpack:"id"`
}

func (*UnregisterBroker) kind() commandKind      { return kindUnregisterBroker }
func (*UnregisterBroker) timeout() time.Duration { return 0 }
func (*UnregisterBroker) newResult() any         { return &UnregisterBrokerResult{} }
func (*UnregisterBroker) failed(err *kerr.Error, msg string) any {
	return &UnregisterBrokerResult{Err: err, Message: msg}
}

func (m *UnregisterBroker) decide(c *Controller) (any, []image.Record) {
	b, ok := c.head.Brokers[m.ID]
	if !ok {
		return &UnregisterBrokerResult{Err: kerr.BrokerIDNotRegistered, Message: fmt.Sprintf("Broker ID %d is not currently registered", m.ID)}, nil
	}
	delete(c.heard, m.ID)
	records := c.stopLeading(m.ID)
	return &UnregisterBrokerResult{}, append(records, &image.UnregisterBroker{ID: m.ID, Incarnation: b.Incarnation})
}

// UnregisterBrokerResult answers UnregisterBroker.
type UnregisterBrokerResult struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

// bootstrapFeatures returns the levels a new cluster starts at: Kafka
// 4.2's defaults.
func bootstrapFeatures() []image.FeatureLevel {
	levels := image.DefaultFeatureLevels()
	var out []image.FeatureLevel
	for _, name := range slices.Sorted(maps.Keys(levels)) {
		out = append(out, image.FeatureLevel{Name: name, Level: levels[name]})
	}
	return out
}
