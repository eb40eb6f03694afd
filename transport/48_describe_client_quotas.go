package transport

// DescribeClientQuotas: v0-1
//
// Behaviour:
//   - With an authorizer: DESCRIBE_CONFIGS on the cluster,
//     CLUSTER_AUTHORIZATION_FAILED otherwise.
//   - Answered from this node's image, with Kafka's filter rules
//     (ClientQuotasImage.describe): a component matches its entity type
//     EXACT (a name), DEFAULT (the <default> entity) or SPECIFIED (any);
//     Strict keeps only entities with no other parts. A match type with
//     the wrong match string, a type named twice or ip beside user or
//     client-id is INVALID_REQUEST with Kafka's message.
//
// Version notes: v1 flexible.

import (
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(48, handler{min: 0, max: 1, handle: a.handleDescribeClientQuotas})
		a.register(49, handler{min: 0, max: 1, handle: a.handleAlterClientQuotas})
	})
}

// quotaFilter is a DescribeClientQuotas filter: exact names (nil for the
// default) and types that need only be present.
type quotaFilter struct {
	exact   map[string]*string
	present map[string]bool
	strict  bool
}

func newQuotaFilter(req *kmsg.DescribeClientQuotasRequest) (quotaFilter, string) {
	f := quotaFilter{exact: map[string]*string{}, present: map[string]bool{}, strict: req.Strict}
	for _, c := range req.Components {
		if _, dup := f.exact[c.EntityType]; dup || f.present[c.EntityType] {
			return f, "Entity type " + c.EntityType + " cannot appear more than once in the filter."
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return f, "Request specified MATCH_TYPE_EXACT, but set match string to null."
			}
			f.exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return f, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
			}
			f.exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return f, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
			}
			f.present[c.EntityType] = true
		default:
			return f, "Unknown match type " + c.MatchType.String()
		}
	}
	has := func(t string) bool { _, ok := f.exact[t]; return ok || f.present[t] }
	if has("ip") && (has("user") || has("client-id")) {
		return f, "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component."
	}
	return f, ""
}

// entityParts lists an entity's parts by type.
func entityParts(e image.QuotaEntity) map[string]image.QuotaName {
	parts := map[string]image.QuotaName{}
	for typ, n := range map[string]image.QuotaName{"user": e.User, "client-id": e.ClientID, "ip": e.IP} {
		if n.Present {
			parts[typ] = n
		}
	}
	return parts
}

func (f quotaFilter) matches(e image.QuotaEntity) bool {
	parts := entityParts(e)
	if f.strict && len(parts) != len(f.exact)+len(f.present) {
		return false
	}
	for typ, name := range f.exact {
		n, ok := parts[typ]
		if !ok || (name == nil) != n.Default || name != nil && *name != n.Name {
			return false
		}
	}
	for typ := range f.present {
		if _, ok := parts[typ]; !ok {
			return false
		}
	}
	return true
}

func (a *API) handleDescribeClientQuotas(c *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(err *kerr.Error, msg string) finish {
		resp.ErrorCode, resp.ErrorMessage = err.Code, kmsg.StringPtr(msg)
		a.metrics.errorCode(48, req.Version, err.Code)
		return respond(resp)
	}
	if z := c.authz(); !z.may(describeConfigs, clusterResource, clusterName) {
		return fail(kerr.ClusterAuthorizationFailed, z.denial(describeConfigs, clusterResource, clusterName))
	}
	f, why := newQuotaFilter(req)
	if why != "" {
		return fail(kerr.InvalidRequest, why)
	}
	im := a.Image()
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{} // null is for an error: Kafka's admin client reads it
	entities := slices.Collect(maps.Keys(im.ClientQuotas))
	slices.SortFunc(entities, func(x, y image.QuotaEntity) int { return strings.Compare(x.String(), y.String()) })
	for _, e := range entities {
		if !f.matches(e) {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, typ := range []string{"user", "client-id", "ip"} {
			n, ok := entityParts(e)[typ]
			if !ok {
				continue
			}
			part := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			part.Type = typ
			if !n.Default {
				part.Name = kmsg.StringPtr(n.Name)
			}
			entry.Entity = append(entry.Entity, part)
		}
		for _, key := range slices.Sorted(maps.Keys(im.ClientQuotas[e])) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = key, im.ClientQuotas[e][key]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return respond(resp)
}
