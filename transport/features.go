package transport

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/skeinlog/skein/controller/image"
)

// What the finalized feature levels turn on, as Kafka 4.2's KafkaApis
// decides (isConsumerGroupProtocolEnabled, isShareGroupProtocolEnabled,
// isStreamsGroupProtocolEnabled): with a feature below the level, its
// APIs answer UNSUPPORTED_VERSION and do nothing, which a client takes for
// a broker without them. The levels are read from the newest image at each
// request, so an UpdateFeatures turns the APIs on or off on every node as
// the image reaches it.
//
//   - group.version 1: ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69).
//   - share.version 1: ShareGroupHeartbeat (76), ShareGroupDescribe (77),
//     ShareFetch (78), ShareAcknowledge (79), DescribeShareGroupOffsets
//     (90, per group), AlterShareGroupOffsets (91), DeleteShareGroupOffsets
//     (92). The share coordinator's APIs (83-87) are not gated, as in
//     Kafka: only the gated ones reach them.
//   - streams.version 1: StreamsGroupHeartbeat (88), StreamsGroupDescribe (89).
//   - transaction.version gates nothing here: a client turns KIP-890's
//     transaction version 2 on when it sees level 2 finalized (ApiVersions),
//     and the transaction coordinator follows the versions the client
//     sends, as it did before (txn/).
//   - metadata.version gates nothing in Skein.

// imageOrEmpty returns the newest image, or the empty one before any.
func (a *API) imageOrEmpty() *image.Image {
	if a.Image != nil {
		if im := a.Image(); im != nil {
			return im
		}
	}
	return image.Empty()
}

// featureOff returns UNSUPPORTED_VERSION when the named feature is below
// level in the newest image, nil when it is on.
func (a *API) featureOff(name string, level int16) *kerr.Error {
	if a.imageOrEmpty().FeatureLevel(name) < level {
		return kerr.UnsupportedVersion
	}
	return nil
}
