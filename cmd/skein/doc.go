// Command skein is the one Skein binary: `skein node` runs a node; the other
// subcommands are the command-line client (topic, group, produce, consume,
// cluster, chaos, bench).
package main
