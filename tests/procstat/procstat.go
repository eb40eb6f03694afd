// Package procstat reads a process's CPU time from /proc, for the
// benchmarks that report a broker's CPU per gigabyte.
package procstat

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ClockTick is the unit of /proc/<pid>/stat's times (USER_HZ). It is 100 on
// every Linux architecture Go supports; getconf confirms it where present.
var ClockTick = func() time.Duration {
	hz := 100
	if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil && n > 0 {
			hz = n
		}
	}
	return time.Second / time.Duration(hz)
}()

// CPU reads utime+stime of pid, over all its threads, from /proc/<pid>/stat.
func CPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// NB: the second field, the command name, is in parentheses and may
	// hold spaces; the fields after the last ')' start with the third,
	// state, so utime (14th) and stime (15th) are at 11 and 12.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * ClockTick, nil
}
