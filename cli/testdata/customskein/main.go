// Command customskein is skein with one more extension kind, upper (package
// upper), built as the README's "Building skein with your own extensions"
// says: a main that imports the packages registering the kinds, for their
// init functions, and runs the command line. In a module of your own it is
// the same file, with your packages' import paths.
package main

import (
	"github.com/skeinlog/skein/cli"

	_ "github.com/skeinlog/skein/cli/testdata/customskein/upper" // registers the kind "upper"
)

func main() { cli.Main() }
