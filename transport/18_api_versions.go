package transport

// ApiVersions: v0-4
//
// Behaviour:
//   - Lists every served key with the versions advertised.
//   - v3+: the features (KIP-584). Supported: the levels this node's
//     binary supports (image.SupportedFeatures): metadata.version 7-29
//     (Kafka 4.2's 3.3-IV3 to 4.2-IV1; Skein gates nothing on it),
//     transaction.version 0-2, group.version 0-1, share.version 0-1,
//     streams.version 0-1. Finalized: each feature's level in the newest
//     image, those above 0 (UpdateFeatures changes them through the
//     controller; a cluster from before feature levels has the levels
//     Skein finalized then, which are Kafka 4.2's defaults), and the epoch
//     of the finalized features is the image's metadata log offset, as
//     Kafka's is. What each level turns on: transaction.version 2 tells
//     clients to use KIP-890's transaction version 2 (Produce v12+ adds
//     partitions to the transaction, EndTxn v5+ bumps the epoch);
//     group.version 1 serves the KIP-848 consumer group APIs
//     (ConsumerGroupHeartbeat, ConsumerGroupDescribe), share.version 1
//     the share group APIs (KIP-932) and streams.version 1 the streams
//     group APIs (KIP-1071): below, they answer UNSUPPORTED_VERSION as
//     Kafka's do (features.go). Kafka's kraft.version (its dynamic
//     quorum) and eligible.leader.replicas.version (KIP-966) are not
//     Skein's to claim.
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
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/skeinlog/skein/controller/image"
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
		supportedFeatures := image.SupportedFeatures()
		for _, name := range slices.Sorted(maps.Keys(supportedFeatures)) {
			r := supportedFeatures[name]
			supported(name, r.Min, r.Max)
		}
		im := a.imageOrEmpty()
		finalized := im.FinalizedFeatures()
		for _, name := range slices.Sorted(maps.Keys(finalized)) {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, finalized[name], finalized[name]
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
		resp.FinalizedFeaturesEpoch = im.Offset
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
