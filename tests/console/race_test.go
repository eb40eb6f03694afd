//go:build race

package console

// raceEnabled reports whether this test binary runs under the race
// detector; the nodes it starts are then built with -race too.
const raceEnabled = true
