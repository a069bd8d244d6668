//go:build unix

package main

import (
	"os"
	"syscall"
	"time"
)

// childUsage reads a finished child's CPU (user + system), context
// switches and peak resident set from its rusage.
func childUsage(ps *os.ProcessState) (cpu time.Duration, switches, maxRSSKiB int64) {
	ru := ps.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw, ru.Maxrss
}
