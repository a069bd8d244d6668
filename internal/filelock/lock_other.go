//go:build !unix && !windows

package filelock

import "os"

// Neither flock nor LockFileEx: nothing is locked, and the callers say
// what that means for them (one writer per log is up to the user; rate
// limits are shared within the process only).
const supported = false

func tryLock(*os.File) error { return nil }

func lock(*os.File) error { return nil }

func unlock(*os.File) error { return nil }

func holder(*os.File) int { return 0 }
