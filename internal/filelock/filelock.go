// Package filelock is the exclusive, advisory file lock shared by Rebound's
// processes: a session log's writer lock and the session index (session), a
// rate-limit bucket's file and its in-flight slots (ratelimit).
//
// A lock belongs to the open file (flock's open file description on Unix,
// the handle on Windows): a second open of the same file, in this process
// or another, cannot take it until the first lets go, is closed, or its
// process dies, so a crash never leaves a file locked. Holder names the
// process holding a lock where the platform can tell: from /proc/locks on
// Linux; on Windows from a second lock the holder takes on a byte whose
// offset is its pid (see lock_windows.go); elsewhere not.
package filelock

import (
	"errors"
	"os"
)

// ErrHeld is TryLock's answer when another open file holds the lock.
var ErrHeld = errors.New("lock held")

// Supported reports whether locks are real here; where they are not
// (neither flock nor LockFileEx), every call succeeds and locks nothing.
const Supported = supported

// TryLock takes f's exclusive lock without waiting; ErrHeld when another
// open file holds it.
func TryLock(f *os.File) error { return tryLock(f) }

// Lock takes f's exclusive lock, waiting for it: for short critical
// sections shared by processes.
func Lock(f *os.File) error { return lock(f) }

// Unlock lets go of f's lock. Closing f does too.
func Unlock(f *os.File) error { return unlock(f) }

// Holder returns the pid of the process holding the lock of f's file, for
// an error message when TryLock said ErrHeld, or 0 if it cannot tell.
// Advisory: the holder may have let go, and another taken it, since.
func Holder(f *os.File) int { return holder(f) }
