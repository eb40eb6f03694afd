// Package transport is the Kafka listener: framing and limits, ApiVersions,
// SASL, kmsg decoding, dispatch to the actor that owns the data, in-order
// responses per connection, and zero-copy fetch. One file per API key.
package transport
