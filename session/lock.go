package session

import (
	"os"

	"github.com/rebound-agent/rebound/internal/filelock"
)

// A log's lock is internal/filelock's: exclusive, belonging to the open
// file (a second open, in this process or another, cannot take it until
// the first lets go, is closed or its process dies), and naming its holder
// where the platform can tell (Linux, Windows). Where there are no file
// locks, one writer per log is up to the user.

// lockFile takes f's lock without waiting; errLockHeld when someone else
// holds it.
func lockFile(f *os.File) error { return filelock.TryLock(f) }

// lockFileWait takes f's lock, waiting for it: for short critical sections
// shared by processes (the session index).
func lockFileWait(f *os.File) error { return filelock.Lock(f) }

// unlockFile lets go of f's lock.
func unlockFile(f *os.File) error { return filelock.Unlock(f) }

// lockHolder is the pid of the process holding the lock of f's file, or 0.
func lockHolder(f *os.File) int { return filelock.Holder(f) }
