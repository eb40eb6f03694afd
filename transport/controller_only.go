package transport

import (
	"slices"

	"github.com/skeinlog/skein/controller/image"
)

// ControllerOnlyKeys are the API keys a controller-only node
// (process.roles=controller) serves on its Kafka listener: ApiVersions,
// the SASL stages, and DescribeQuorum, which a controller answers from
// its own seat in the quorum. Kafka's controller-only nodes serve the
// controller APIs on their controller listener and no client data;
// Skein's controllers speak raft over remoting (cluster.listen), so the
// Kafka listener is left with what a quorum tool asks. Any other key
// closes the connection, as an unknown key does: the node has no
// partitions, groups or transactions to answer for.
var ControllerOnlyKeys = []int16{17, 18, 36, 55}

// ServeOnly drops the handlers of every key but keys, so that ApiVersions
// lists only those and a request for any other closes the connection.
// Call it before the API serves.
func (a *API) ServeOnly(keys []int16) {
	for k := range a.handlers {
		if !slices.Contains(keys, int16(k)) {
			a.handlers[k] = handler{}
		}
	}
}

// controllerForClients is the ControllerID that Metadata and
// DescribeCluster give clients: the active controller when it is a broker
// of im, else this node, which forwards the controller's requests
// (CreateTopics, AlterConfigs, ...) to the active controller itself. A
// controller-only node serves clients nothing but the quorum's keys, so a
// client told its id could not use it (franz-go refuses a controller
// missing from the broker list); Kafka's KRaft brokers likewise name a
// live broker, since clients cannot reach the controllers. -1 when no
// active controller is known.
func (a *API) controllerForClients(im *image.Image) int32 {
	id := a.activeController()
	if id < 0 {
		return id
	}
	if _, ok := im.Brokers[id]; ok {
		return id
	}
	return a.Node.NodeID
}
