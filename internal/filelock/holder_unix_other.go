//go:build unix && !linux

package filelock

import "os"

// holder cannot tell who holds a lock here.
func holder(*os.File) int { return 0 }
