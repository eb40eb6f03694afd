// Package replica holds the leader and follower behaviour of a hosted replica:
// follower fetching, follower tracking, the high watermark, ISR changes and
// leader-epoch truncation (KIP-101, KIP-320).
package replica
