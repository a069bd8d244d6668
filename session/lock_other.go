//go:build !unix && !windows

package session

import "os"

// lockFile does nothing where neither flock nor LockFileEx is available:
// one writer per log is then up to the user.
func lockFile(f *os.File) error { return nil }

func lockHolder(f *os.File) int { return 0 }

func lockFileWait(f *os.File) error { return nil }

func unlockFile(f *os.File) error { return nil }
