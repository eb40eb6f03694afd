// Package security holds what a node needs to know who is on the other
// end of a connection: TLS for its listeners, with certificates reloaded
// from disk when they change, and the principal a client certificate
// maps to (Kafka's ssl.principal.mapping.rules). Plain Go, no actors:
// transport and node use it.
package security
