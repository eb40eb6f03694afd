//go:build !linux

package cli

// relaxTimers does nothing outside Linux, which alone has a per-thread
// timer slack (PR_SET_TIMERSLACK).
func relaxTimers() {}
