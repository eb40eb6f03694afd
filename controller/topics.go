package controller

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/configs"
	"github.com/skeinlog/skein/controller/image"
)

// MaxPartitions bounds a topic's partition count. Kafka has no such limit,
// but a count a client may send (up to 2^31-1) must not make the
// controller allocate without bound; and a node hosting this many
// partition actors of one topic is far past what it can serve.
const MaxPartitions = 100_000

// maxTopicNameLength is Kafka's limit (249: a partition directory name
// adds a dash and up to 10 digits to the topic name, within 255).
const maxTopicNameLength = 249

// ValidateTopicName applies Kafka's rules for topic names (Topic.validate)
// and returns why name is illegal, or "" if it is legal.
func ValidateTopicName(name string) string { return validateName("Topic", name) }

// ClusterMetadataTopic is the name of Kafka's KRaft metadata log, which
// CreateTopics refuses with INVALID_REQUEST, as Kafka does.
const ClusterMetadataTopic = "__cluster_metadata"

// validateName applies the topic name rules to a name of what (a topic,
// an extension instance), with Kafka's messages.
func validateName(what, name string) string {
	switch {
	case name == "":
		return what + " name is illegal, it can't be empty"
	case name == "." || name == "..":
		return what + " name cannot be \".\" or \"..\""
	case len(name) > maxTopicNameLength:
		return fmt.Sprintf("%s name is illegal, it can't be longer than %d characters, %s name: %s", what, maxTopicNameLength, strings.ToLower(what), name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("%s name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", what, name)
		}
	}
	return ""
}

// collisionName is the name under which topics collide in metrics, where
// Kafka replaces '.' with '_'.
func collisionName(name string) string { return strings.ReplaceAll(name, ".", "_") }

func (c *Controller) createTopics(m *CreateTopics) (*CreateTopicsResult, []image.Record) {
	res := &CreateTopicsResult{Topics: make([]TopicResult, len(m.Topics))}
	var records []image.Record
	planned := map[string]string{}
	dup := duplicates(len(m.Topics), func(i int) string { return m.Topics[i].Name })
	for i, t := range m.Topics {
		r := &res.Topics[i]
		r.Name = t.Name
		if dup[t.Name] {
			r.Err, r.Message = kerr.InvalidRequest, "Create topics request from client contains duplicate topic names."
			continue
		}
		rec, err, msg := c.planTopic(t, planned)
		if err != nil {
			r.Err, r.Message = err, msg
			continue
		}
		planned[collisionName(t.Name)] = t.Name
		r.ID, r.NumPartitions = rec.ID, int32(len(rec.Partitions))
		r.ReplicationFactor = int16(len(rec.Partitions[0].Replicas))
		records = append(records, rec)
	}
	if m.ValidateOnly {
		return res, nil
	}
	return res, records
}

// planTopic validates one new topic and returns its record.
func (c *Controller) planTopic(t NewTopic, planned map[string]string) (*image.CreateTopic, *kerr.Error, string) {
	if msg := ValidateTopicName(t.Name); msg != "" {
		return nil, kerr.InvalidTopicException, msg
	}
	if t.Name == ClusterMetadataTopic {
		// Kafka's KRaft log answers to this name; no client may create a
		// topic of it on Kafka, nor, so that a client that works here
		// works there, on Skein.
		return nil, kerr.InvalidRequest, fmt.Sprintf("Creation of internal topic %s is prohibited.", t.Name)
	}
	if _, ok := c.head.Topics[t.Name]; ok {
		return nil, kerr.TopicAlreadyExists, fmt.Sprintf("Topic '%s' already exists.", t.Name)
	}
	col := collisionName(t.Name)
	other, collides := planned[col]
	for name := range c.head.Topics {
		if collisionName(name) == col {
			other, collides = name, true
		}
	}
	if collides {
		return nil, kerr.InvalidTopicException, fmt.Sprintf("Topic '%s' collides with existing topic: %s", t.Name, other)
	}
	if err := configs.ValidateTopicOverrides(t.Configs); err != nil {
		return nil, kerr.InvalidConfig, err.Error()
	}
	assign := t.Assignments
	if len(assign) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, kerr.InvalidRequest, "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time."
		}
		if err, msg := c.checkAssignments(assign); err != nil {
			return nil, err, msg
		}
	} else {
		n, rf := t.NumPartitions, t.ReplicationFactor
		if n == -1 {
			n = c.cfg.Node.NumPartitions
		}
		if rf == -1 {
			rf = c.cfg.Node.DefaultReplicationFactor
		}
		if n <= 0 {
			return nil, kerr.InvalidPartitions, "Number of partitions must be larger than 0."
		}
		if n > MaxPartitions {
			return nil, kerr.InvalidPartitions, fmt.Sprintf("Number of partitions must be at most %d.", MaxPartitions)
		}
		if rf <= 0 {
			return nil, kerr.InvalidReplicationFactor, "Replication factor must be larger than 0."
		}
		if live := len(c.head.LiveBrokerIDs()); int(rf) > live {
			return nil, kerr.InvalidReplicationFactor, fmt.Sprintf("Unable to replicate the partition %d time(s): The target replication factor of %d cannot be reached because only %d broker(s) are registered and unfenced.", rf, rf, live)
		}
		assign = c.place(int(n), int(rf))
	}
	rec := &image.CreateTopic{Name: t.Name, ID: newTopicID(), Configs: maps.Clone(t.Configs), Internal: t.Internal}
	for i, replicas := range assign {
		rec.Partitions = append(rec.Partitions, newPartition(int32(i), replicas))
	}
	return rec, nil, ""
}

func newPartition(index int32, replicas []int32) image.Partition {
	return image.Partition{Index: index, Leader: replicas[0], Replicas: slices.Clone(replicas), ISR: slices.Clone(replicas)}
}

// place spreads n partitions over the live brokers round robin, from a
// random one, so that leaders spread evenly across topics too; with racks
// (broker.rack), the brokers go round in rack-alternated order, as
// Kafka's, so that consecutive partitions and a partition's replicas sit
// in different racks. The caller has checked that rf brokers are live.
func (c *Controller) place(n, rf int) [][]int32 {
	brokers := rackAlternated(c.head, c.head.LiveBrokerIDs())
	start := rand.IntN(len(brokers))
	out := make([][]int32, n)
	for p := range n {
		replicas := make([]int32, rf)
		for r := range rf {
			replicas[r] = brokers[(start+p+r)%len(brokers)]
		}
		out[p] = replicas
	}
	return out
}

// rackAlternated orders brokers (sorted by id) by taking one from each
// rack in turn, racks in name order: a1 b1 c1 a2 b2 ... Brokers without a
// rack form a rack of their own.
func rackAlternated(im *image.Image, brokers []int32) []int32 {
	byRack := map[string][]int32{}
	for _, id := range brokers {
		r := im.Brokers[id].Rack
		byRack[r] = append(byRack[r], id)
	}
	if len(byRack) < 2 {
		return brokers
	}
	racks := slices.Sorted(maps.Keys(byRack))
	out := make([]int32, 0, len(brokers))
	for round := 0; len(out) < len(brokers); round++ {
		for _, r := range racks {
			if round < len(byRack[r]) {
				out = append(out, byRack[r][round])
			}
		}
	}
	return out
}

func (c *Controller) checkAssignments(assign [][]int32) (*kerr.Error, string) {
	rf := len(assign[0])
	for i, replicas := range assign {
		if len(replicas) == 0 || len(replicas) != rf {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("Partition %d has %d replicas; every partition needs the same number, at least one.", i, len(replicas))
		}
		seen := map[int32]bool{}
		for _, b := range replicas {
			if rb, ok := c.head.Brokers[b]; !ok || rb.Fenced {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Broker %d in the assignment of partition %d is not registered, or fenced.", b, i)
			}
			if seen[b] {
				return kerr.InvalidReplicaAssignment, fmt.Sprintf("Partition %d names broker %d twice.", i, b)
			}
			seen[b] = true
		}
	}
	return nil, ""
}

func (c *Controller) deleteTopics(m *DeleteTopics) (*DeleteTopicsResult, []image.Record) {
	res := &DeleteTopicsResult{}
	var records []image.Record
	seen := map[image.TopicID]bool{}
	add := func(t *image.Topic, r TopicResult) {
		if t != nil && !seen[t.ID] {
			seen[t.ID] = true
			records = append(records, &image.DeleteTopic{ID: t.ID})
		}
		res.Topics = append(res.Topics, r)
	}
	for _, name := range m.Names {
		t := c.head.Topics[name]
		r := TopicResult{Name: name}
		if t == nil {
			r.Err, r.Message = kerr.UnknownTopicOrPartition, "This server does not host this topic-partition."
		} else {
			r.ID = t.ID
		}
		add(t, r)
	}
	for _, id := range m.IDs {
		t := c.head.TopicsByID[id]
		r := TopicResult{ID: id}
		if t == nil {
			r.Err, r.Message = kerr.UnknownTopicID, "This server does not host this topic ID."
		} else {
			r.Name = t.Name
		}
		add(t, r)
	}
	return res, records
}

func (c *Controller) createPartitions(m *CreatePartitions) (*CreatePartitionsResult, []image.Record) {
	res := &CreatePartitionsResult{Topics: make([]TopicResult, len(m.Topics))}
	var records []image.Record
	dup := duplicates(len(m.Topics), func(i int) string { return m.Topics[i].Name })
	for i, pc := range m.Topics {
		r := &res.Topics[i]
		r.Name = pc.Name
		t := c.head.Topics[pc.Name]
		switch {
		case dup[pc.Name]:
			r.Err, r.Message = kerr.InvalidRequest, "Duplicate topic in request."
			continue
		case t == nil:
			r.Err, r.Message = kerr.UnknownTopicOrPartition, "This server does not host this topic-partition."
			continue
		case int(pc.Count) <= len(t.Partitions):
			r.Err, r.Message = kerr.InvalidPartitions, fmt.Sprintf("Topic currently has %d partitions, which is higher than the requested %d.", len(t.Partitions), pc.Count)
			continue
		case pc.Count > MaxPartitions:
			r.Err, r.Message = kerr.InvalidPartitions, fmt.Sprintf("Number of partitions must be at most %d.", MaxPartitions)
			continue
		}
		add := int(pc.Count) - len(t.Partitions)
		assign := pc.Assignments
		if len(assign) > 0 {
			if len(assign) != add {
				r.Err, r.Message = kerr.InvalidReplicaAssignment, fmt.Sprintf("Increasing the number of partitions by %d but %d assignments provided.", add, len(assign))
				continue
			}
			if err, msg := c.checkAssignments(assign); err != nil {
				r.Err, r.Message = err, msg
				continue
			}
			if rf := len(t.Partitions[0].Replicas); len(assign[0]) != rf {
				r.Err, r.Message = kerr.InvalidReplicaAssignment, fmt.Sprintf("Inconsistent replication factor: the topic's partitions have %d replicas, the new ones %d.", rf, len(assign[0]))
				continue
			}
		} else {
			rf := len(t.Partitions[0].Replicas)
			if live := len(c.head.LiveBrokerIDs()); rf > live {
				r.Err, r.Message = kerr.InvalidReplicationFactor, fmt.Sprintf("Unable to replicate the new partitions %d time(s): only %d broker(s) are registered and unfenced.", rf, live)
				continue
			}
			assign = c.place(add, rf)
		}
		rec := &image.AddPartitions{ID: t.ID}
		for j, replicas := range assign {
			rec.Partitions = append(rec.Partitions, newPartition(int32(len(t.Partitions)+j), replicas))
		}
		records = append(records, rec)
	}
	if m.ValidateOnly {
		return res, nil
	}
	return res, records
}

func (c *Controller) alterConfigs(m *AlterConfigs) (*AlterConfigsResult, []image.Record) {
	res := &AlterConfigsResult{Resources: make([]ConfigResult, len(m.Resources))}
	var records []image.Record
	dup := duplicates(len(m.Resources), func(i int) string { return fmt.Sprint(m.Resources[i].Type, "/", m.Resources[i].Name) })
	for i, rsc := range m.Resources {
		r := &res.Resources[i]
		r.Type, r.Name = rsc.Type, rsc.Name
		if dup[fmt.Sprint(rsc.Type, "/", rsc.Name)] {
			r.Err, r.Message = kerr.InvalidRequest, "Duplicate resource in request."
			continue
		}
		rec, err, msg := c.planConfigs(rsc, m.Incremental)
		if err != nil {
			r.Err, r.Message = err, msg
			continue
		}
		records = append(records, rec)
	}
	if m.ValidateOnly {
		return res, nil
	}
	return res, records
}

// planConfigs computes a resource's configs after the ops and validates them
// as Kafka does: topic configs against the topic config rules; broker
// configs (resource name "" for every broker, or a broker id) must be
// dynamic broker configs (configs.IsDynamicBrokerConfig), and a static one
// is refused INVALID_REQUEST as Kafka's "Cannot update these configs
// dynamically"; group configs (any group id, whether it has a group or
// not, but not "") within this node's bounds (configs.ValidateGroup).
func (c *Controller) planConfigs(rsc ConfigResource, incremental bool) (*image.SetConfigs, *kerr.Error, string) {
	var current map[string]string
	name, validate := rsc.Name, configs.ValidateTopicOverrides
	switch rsc.Type {
	case image.ResourceTopic:
		t := c.head.Topics[rsc.Name]
		if t == nil {
			return nil, kerr.UnknownTopicOrPartition, fmt.Sprintf("Topic %s does not exist.", rsc.Name)
		}
		current = t.Configs
	case image.ResourceBroker:
		if rsc.Name == "" {
			current = c.head.BrokerConfigs
			break
		}
		id, err := strconv.ParseInt(rsc.Name, 10, 32)
		if err != nil {
			return nil, kerr.InvalidRequest, fmt.Sprintf("Invalid broker name %s", rsc.Name)
		}
		current = c.head.PerBrokerConfigs[int32(id)]
		name = strconv.Itoa(int(id)) // "01" and "1" are the same broker
	case image.ResourceGroup:
		if rsc.Name == "" {
			return nil, kerr.InvalidRequest, "Default group resources are not allowed."
		}
		current = c.head.GroupConfigs[rsc.Name]
		validate = func(m map[string]string) error { return configs.ValidateGroup(c.cfg.Node, m) }
	default:
		return nil, kerr.InvalidRequest, fmt.Sprintf("Altering configs of resource type %d is not supported.", rsc.Type)
	}
	if rsc.Type == image.ResourceBroker {
		validate = configs.ValidateDynamic
	}
	if incremental {
		if dup := duplicates(len(rsc.Ops), func(i int) string { return rsc.Ops[i].Name }); len(dup) > 0 {
			return nil, kerr.InvalidRequest, fmt.Sprintf("Error due to duplicate config keys: %s", strings.Join(slices.Sorted(maps.Keys(dup)), ", "))
		}
	}
	next := map[string]string{}
	if incremental {
		next = maps.Clone(current)
		if next == nil {
			next = map[string]string{}
		}
	}
	for _, op := range rsc.Ops {
		switch {
		case !incremental || op.Op == OpSet:
			if op.Value == nil {
				return nil, kerr.InvalidRequest, fmt.Sprintf("Null value not supported for %s", op.Name)
			}
			next[op.Name] = *op.Value
		case op.Op == OpDelete:
			delete(next, op.Name)
		case op.Op == OpAppend || op.Op == OpSubtract:
			if !configs.IsListConfig(op.Name) {
				return nil, kerr.InvalidConfig, fmt.Sprintf("Config %s is not a list: it cannot be appended to or subtracted from.", op.Name)
			}
			if op.Value == nil {
				return nil, kerr.InvalidRequest, fmt.Sprintf("Null value not supported for %s", op.Name)
			}
			cur, ok := next[op.Name]
			if !ok {
				// Kafka edits the default list when the resource has none.
				cur, _ = configs.DefaultValue(op.Name)
			}
			next[op.Name] = editList(cur, *op.Value, op.Op == OpAppend)
		default:
			return nil, kerr.InvalidRequest, fmt.Sprintf("Unknown config operation %d", op.Op)
		}
	}
	if rsc.Type == image.ResourceBroker {
		var static []string
		for _, k := range slices.Sorted(maps.Keys(next)) {
			if configs.IsBrokerConfig(k) && !configs.IsDynamicBrokerConfig(k) {
				static = append(static, k)
			}
		}
		if len(static) > 0 {
			return nil, kerr.InvalidRequest, fmt.Sprintf("Cannot update these configs dynamically: Set(%s)", strings.Join(static, ", "))
		}
	}
	if err := validate(next); err != nil {
		if rsc.Type == image.ResourceBroker && !errors.Is(err, configs.ErrUnknownBrokerConfig) {
			// Kafka refuses a bad broker config value as an invalid
			// request ("Invalid config value for resource"), a topic's as
			// an invalid config.
			return nil, kerr.InvalidRequest, err.Error()
		}
		return nil, kerr.InvalidConfig, err.Error()
	}
	rec := &image.SetConfigs{Resource: rsc.Type, Name: name, Configs: map[string]*string{}}
	for k, v := range next {
		if cur, ok := current[k]; !ok || cur != v {
			rec.Configs[k] = &v
		}
	}
	for k := range current {
		if _, ok := next[k]; !ok {
			rec.Configs[k] = nil
		}
	}
	return rec, nil, ""
}

// editList appends items to or removes them from a comma-separated list.
func editList(list, items string, add bool) string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	for _, it := range strings.Split(items, ",") {
		it = strings.TrimSpace(it)
		i := slices.Index(out, it)
		switch {
		case add && i < 0 && it != "":
			out = append(out, it)
		case !add && i >= 0:
			out = slices.Delete(out, i, i+1)
		}
	}
	return strings.Join(out, ",")
}

// duplicates returns the keys that occur more than once among n items, as
// Kafka refuses every occurrence of a resource named twice in one request.
func duplicates(n int, key func(int) string) map[string]bool {
	seen, dup := map[string]bool{}, map[string]bool{}
	for i := range n {
		k := key(i)
		dup[k] = seen[k]
		seen[k] = true
	}
	for k, v := range dup {
		if !v {
			delete(dup, k)
		}
	}
	return dup
}
