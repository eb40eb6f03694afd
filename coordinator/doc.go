// Package coordinator holds the group coordinator (classic protocol and
// KIP-848) and the transaction coordinator actors. Their state lives in the
// internal topics __consumer_offsets and __transaction_state and is rebuilt
// from them when an actor starts.
package coordinator
