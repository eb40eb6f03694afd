// Package actors is the shared actor plumbing of Skein: actor-system setup,
// the bridge that sends protoactor-go's slog output into zerolog, the msgpack
// serializer for remoting frames, supervision strategies, stable actor names,
// the fault-injection middleware, and the extension API.
//
// Every other package that runs actors builds them through this package, so
// that supervision, logging and fault injection are the same everywhere.
//
// # Actor systems and logging
//
// NewSystem is the only way Skein makes an actor system. It replaces
// protoactor's default logger (coloured text on stderr, at info) with the
// node's zerolog logger, at warn unless the node logs at debug, and leaves
// protoactor's OpenTelemetry metrics off. SlogHandler is the bridge itself,
// for other slog users. See ../shared/protoactor.md §6.1 for the traps this
// avoids.
package actors
