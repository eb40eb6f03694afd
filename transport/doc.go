// Package transport is the Kafka listeners: framing and limits, ApiVersions,
// kmsg decoding, dispatch to the actor that owns the data, in-order
// responses per connection, and the Fetch write path. One Server serves
// every listener of a node (Listener: its name, TLS and SASL); a
// connection on an SSL listener runs its TLS handshake first, and one on a
// SASL listener serves only ApiVersions, SaslHandshake and
// SaslAuthenticate until authenticated (frames bounded by
// sasl.server.max.receive.size meanwhile). Limits bound the connections
// (max.connections, max.connections.per.ip). With an authorizer, each
// handler asks whether the connection's principal may do what its request
// asks (authorize.go), only ever what its key's line of the permission
// table names (permissions.go). One file per API key,
// named as Kafka numbers them (00_produce.go, 01_fetch.go, ...), each opening
// with the versions served, the behaviour, what is delegated to which actor,
// and version notes.
//
// # Connections
//
// A connection has two goroutines and no more, whatever its traffic:
//
//   - the reader reads a size-prefixed frame (refusing sizes above
//     socket.request.max.bytes before allocating, and growing its buffer
//     only as bytes arrive; a Produce body goes into a pooled buffer that
//     the partitions' actors give back once they have written its batches,
//     body.go), decodes it with kmsg, and starts the request:
//     the handler validates, sends messages to the actors that own the data
//     (a partition's actor for Produce, the controller for admin commands),
//     or reads published views (Fetch, ListOffsets, Metadata) and returns a
//     finish function at once;
//   - the writer takes the pending requests in order, calls each finish
//     (which waits for the actors' answers, or long-polls a Fetch on the
//     partitions' view notifications) and writes the response.
//
// The queue between them holds MaxInflight requests: a client that pipelines
// more waits in its socket. A request that cannot be parsed, or an unknown
// API key or version, closes the connection with a log line (ApiVersions
// excepted: KIP-511). A client that goes away stops its pending waits; a
// node that stops answers what it has read.
//
// # Fetch
//
// Fetch responses carry record bytes from segment files: kmsg encodes only
// the framing around them (fetch_session.go has KIP-227 sessions). The
// bytes are copied from the page cache into the connection's pooled write
// buffer; sendfile is implemented too but off by default, because on this
// kind of machine it measured no faster and no cheaper in broker CPU (see
// 01_fetch.go for the figures).
//
// # Replication
//
// Followers replicate with Kafka Fetch requests on this listener, as
// Kafka's do: a Fetch with ReplicaState set comes from another node's
// fetcher (partition/fetcher.go) and is answered from the partitions'
// views by replica_fetch.go, record bytes as for a client, and the
// follower's position goes to each partition's actor. Remoting does not
// carry record bytes (see partition/replication.go for the measured
// reason).
//
// # Errors
//
// Every Kafka-visible error is a kerr value chosen in the handler of its
// API; internal errors are logged once there.
package transport
