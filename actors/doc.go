// Package actors is the shared actor plumbing of Skein: actor-system setup,
// the bridge that sends protoactor-go's slog output into zerolog, the msgpack
// serializer for remoting frames, supervision strategies, stable actor names,
// the fault-injection middleware, and the extension API.
//
// Every other package that runs actors builds them through this package, so
// that supervision, logging and fault injection are the same everywhere.
package actors
