package controller

import (
	"fmt"
	"math"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// The client quota keys and their types, Kafka's (QuotaConfig): byte
// rates and the connection rate are whole numbers.
var (
	clientQuotaKeys = map[string]bool{"producer_byte_rate": true, "consumer_byte_rate": true, "request_percentage": false,
		"controller_mutation_rate": false}
	ipQuotaKeys = map[string]bool{"connection_creation_rate": true}
)

// QuotaEntityPart is one part of a quota entity as a request names it:
// its type (user, client-id, ip) and its name, nil for the default.
type QuotaEntityPart struct {
	Type string  `msgpack:"t"`
	Name *string `msgpack:"n"`
}

// QuotaOp sets a quota key or removes it.
type QuotaOp struct {
	Key    string  `msgpack:"k"`
	Value  float64 `msgpack:"v"`
	Remove bool    `msgpack:"rm"`
}

// QuotaAlteration is one entity's changes.
type QuotaAlteration struct {
	Entity []QuotaEntityPart `msgpack:"entity"`
	Ops    []QuotaOp         `msgpack:"ops"`
}

// AlterClientQuotas changes client quotas (AlterClientQuotas), each
// entity on its own as Kafka's ClientQuotaControlManager decides it: an
// entity with a bad part or a bad op changes nothing, the others what
// they asked.
type AlterClientQuotas struct {
	Entries      []QuotaAlteration `msgpack:"entries"`
	ValidateOnly bool              `msgpack:"validate"`
}

// AlterClientQuotasResult answers AlterClientQuotas, one result per entry
// in order.
type AlterClientQuotasResult struct {
	Results []QuotaResult `msgpack:"results"`
}

// QuotaResult is one entity's outcome.
type QuotaResult struct {
	Err     *kerr.Error `msgpack:"err"`
	Message string      `msgpack:"msg"`
}

func (*AlterClientQuotas) kind() commandKind                        { return kindAlterClientQuotas }
func (*AlterClientQuotas) timeout() time.Duration                   { return 0 }
func (*AlterClientQuotas) newResult() any                           { return &AlterClientQuotasResult{} }
func (m *AlterClientQuotas) failed(err *kerr.Error, msg string) any { return m.Failed(err, msg) }

// Failed returns every entry's result as err.
func (m *AlterClientQuotas) Failed(err *kerr.Error, msg string) *AlterClientQuotasResult {
	res := &AlterClientQuotasResult{}
	for range m.Entries {
		res.Results = append(res.Results, QuotaResult{Err: err, Message: msg})
	}
	return res
}

func (m *AlterClientQuotas) decide(c *Controller) (any, []image.Record) {
	res := &AlterClientQuotasResult{}
	var records []image.Record
	for _, e := range m.Entries {
		entity, keys, why := QuotaEntityOf(e.Entity)
		var recs []image.Record
		if why == "" {
			recs, why = quotaRecords(entity, keys, e.Ops, c.head.ClientQuotas[entity])
		}
		if why != "" {
			res.Results = append(res.Results, QuotaResult{Err: kerr.InvalidRequest, Message: why})
			continue
		}
		res.Results = append(res.Results, QuotaResult{})
		records = append(records, recs...)
	}
	if m.ValidateOnly {
		return res, nil
	}
	return res, records
}

// QuotaEntityOf checks a requested entity as Kafka does and returns it
// with the keys it may have, or why it is refused.
func QuotaEntityOf(parts []QuotaEntityPart) (image.QuotaEntity, map[string]bool, string) {
	var e image.QuotaEntity
	if len(parts) == 0 {
		return e, nil, "Invalid empty client quota entity"
	}
	for _, p := range parts {
		var slot *image.QuotaName
		switch p.Type {
		case "user":
			slot = &e.User
		case "client-id":
			slot = &e.ClientID
		case "ip":
			slot = &e.IP
		default:
			return e, nil, "Unhandled client quota entity type: " + p.Type
		}
		if slot.Present {
			return e, nil, "Invalid client quota entity, duplicate entity entry " + p.Type
		}
		switch {
		case p.Name == nil:
			*slot = image.DefaultName
		case *p.Name == "":
			return e, nil, "Empty " + p.Type + " not supported"
		default:
			*slot = image.Named(*p.Name)
		}
	}
	if !e.IP.Present {
		return e, clientQuotaKeys, ""
	}
	if e.User.Present || e.ClientID.Present {
		return e, nil, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
	}
	if !e.IP.Default && net.ParseIP(e.IP.Name) == nil {
		if _, err := net.LookupHost(e.IP.Name); err != nil {
			return e, nil, e.IP.Name + " is not a valid IP or resolvable host."
		}
	}
	return e, ipQuotaKeys, ""
}

// quotaRecords returns the records of an entity's ops: a removal of a
// key it has, a value that changes; or why an op is refused.
func quotaRecords(e image.QuotaEntity, keys map[string]bool, ops []QuotaOp, current map[string]float64) ([]image.Record, string) {
	var out []image.Record
	for _, op := range ops {
		if op.Remove {
			if _, ok := current[op.Key]; ok {
				out = append(out, &image.SetClientQuota{Entity: e, Key: op.Key, Remove: true})
			}
			continue
		}
		whole, known := keys[op.Key]
		switch {
		case !known:
			return nil, "Invalid configuration key " + op.Key
		case op.Value <= 0:
			return nil, fmt.Sprintf("Quota %s must be greater than 0", op.Key)
		case whole && math.Abs(math.Round(op.Value)-op.Value) > 1e-6:
			return nil, "Configuration " + op.Key + " must be a Long value"
		}
		if v, ok := current[op.Key]; !ok || v != op.Value {
			out = append(out, &image.SetClientQuota{Entity: e, Key: op.Key, Value: op.Value})
		}
	}
	return out, ""
}
