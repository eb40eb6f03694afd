package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "skein: not yet wired")
	os.Exit(1)
}
