// Package security holds what a node needs to know who is on the other
// end of a connection: TLS for its listeners, with certificates reloaded
// from disk when they change; the principal a client certificate maps to
// (Kafka's ssl.principal.mapping.rules); SASL sessions (PLAIN, with the
// users of a Kafka JAAS line; SCRAM-SHA-256/512, RFC 5802's server side
// with Kafka's nonce rule, against credentials the caller looks up;
// OAUTHBEARER, JWTs checked against a JWKS with golang-jwt and keyfunc);
// ACLs and the decisions of Kafka's StandardAuthorizer over them
// (Authorizer: super users, DENY first, implied DESCRIBE, LITERAL,
// PREFIXED and wildcard patterns, allow.everyone.if.no.acl.found).
// Plain Go, no actors: transport and node use it.
package security
