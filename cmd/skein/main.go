// Command skein is the Skein binary: `skein node` runs a node, and the other
// subcommands are the command-line client. All of it is package cli; this
// main only calls cli.Main.
//
// It has the extension kinds Skein comes with. A skein with more is a main
// like this one, in a module of your own, that also imports the packages
// registering your kinds, built with go build: cli/testdata/customskein is
// one, and the README's "Building skein with your own extensions" has the
// steps.
package main

import "github.com/skeinlog/skein/cli"

func main() { cli.Main() }
