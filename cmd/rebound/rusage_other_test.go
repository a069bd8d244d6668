//go:build !unix

package main

import (
	"os"
	"time"
)

// childUsage: without rusage only the CPU time is known.
func childUsage(ps *os.ProcessState) (cpu time.Duration, switches, maxRSSKiB int64) {
	return ps.UserTime() + ps.SystemTime(), 0, 0
}
