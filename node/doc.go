// Package node composes one Skein process: the actor system, remoting, the
// controller and broker roles, and the listeners; it owns start-up and
// graceful stop.
package node
