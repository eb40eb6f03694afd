package transport

// ApiVersions: v0-4
//
// Behaviour:
//   - Lists every served key with the versions advertised.
//   - v3+: the features (KIP-584): transaction.version 0-2 supported and 2
//     finalized, which tells clients to use KIP-890's transaction version
//     2 (Produce v12+ adds partitions to the transaction, EndTxn v5+ bumps
//     the epoch); group.version 0-1 supported and 1 finalized, the KIP-848
//     consumer group protocol (ConsumerGroupHeartbeat), as Kafka 4
//     finalizes it; share.version 0-1 supported and 1 finalized, share
//     groups (KIP-932), as Kafka 4.2 finalizes it; streams.version 0-1
//     supported and 1 finalized, streams groups (KIP-1071), as Kafka 4.2
//     finalizes it (StreamsGroupHeartbeat and StreamsGroupDescribe answer
//     only then). Kafka's other features are not Skein's to claim
//     (metadata.version and kraft.version describe Kafka's own metadata
//     log; ELR is not implemented). The finalized features never change, so their epoch
//     is constant.
//   - v3: supported features whose range starts at 0 are left out (all of
//     Skein's), as Kafka does since KIP-1022: clients before it read a
//     minimum of 0 as an invalid range. v4 lists them all.
//   - A request newer than v4 is answered at v0 with UNSUPPORTED_VERSION and
//     only ApiVersions' own range, without parsing its body (KIP-511), so
//     the client retries at a version we speak; Kafka answers the same.
//     The response header is always v0.
//
// Version notes:
//   - v1: ThrottleMillis.
//   - v3: flexible; ClientSoftwareName and ClientSoftwareVersion (KIP-511).
//   - v4: supported features with a minimum of 0 (KIP-1022).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registrations = append(registrations, func(a *API) {
		a.register(18, handler{min: 0, max: 4, handle: a.handleApiVersions})
	})
}

func (a *API) handleApiVersions(_ *conn, kreq kmsg.Request) finish {
	req := kreq.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = a.apiKeys()
	if req.Version >= 3 {
		supported := func(name string, minVersion, maxVersion int16) {
			if minVersion == 0 && req.Version < 4 {
				return // KIP-1022
			}
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = name, minVersion, maxVersion
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		supported("transaction.version", 0, 2)
		supported("group.version", 0, 1)
		supported("share.version", 0, 1)
		supported("streams.version", 0, 1)
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "transaction.version", 2, 2
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "group.version", 1, 1
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "share.version", 1, 1
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = "streams.version", 1, 1
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		resp.FinalizedFeaturesEpoch = 1
	}
	return respond(resp)
}

func (a *API) apiVersionsUnsupported() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	for _, k := range a.apiKeys() {
		if k.ApiKey == 18 {
			resp.ApiKeys = append(resp.ApiKeys, k)
		}
	}
	return resp
}

func (a *API) apiKeys() []kmsg.ApiVersionsResponseApiKey {
	var keys []kmsg.ApiVersionsResponseApiKey
	for key, h := range a.handlers {
		if h.handle == nil {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = int16(key), h.advertisedMin(), h.max
		keys = append(keys, k)
	}
	return keys
}
