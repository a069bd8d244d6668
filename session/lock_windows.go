package session

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows locks byte ranges, and a locked range cannot be read or written
// through another handle: the lock is therefore taken on one byte far past
// any log's end (locking past the end of a file is allowed), so that
// readers of the log (session/list, a load) are never refused. Like
// flock's, the lock belongs to the handle: a second open of the file, in
// this process or another, cannot take it until the first is closed or its
// process dies.
const (
	lockOffsetLow  = 0xfffffffe
	lockOffsetHigh = 0x7fffffff
)

// lockFile takes an exclusive lock (LockFileEx) on f without waiting. It
// returns errLockHeld when someone else holds it.
func lockFile(f *os.File) error {
	err := lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return errLockHeld
	}
	return err
}

// lockFileWait takes an exclusive lock on f, waiting for it.
func lockFileWait(f *os.File) error { return lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK) }

// unlockFile lets go of lockFile's lock on f.
func unlockFile(f *os.File) error {
	return control(f, func(h windows.Handle) error {
		ol := windows.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh}
		return windows.UnlockFileEx(h, 0, 1, 0, &ol)
	})
}

func lockFileEx(f *os.File, flags uint32) error {
	return control(f, func(h windows.Handle) error {
		ol := windows.Overlapped{Offset: lockOffsetLow, OffsetHigh: lockOffsetHigh}
		return windows.LockFileEx(h, flags, 0, 1, 0, &ol)
	})
}

func control(f *os.File, fn func(windows.Handle) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(windows.Handle(fd)) }); err != nil {
		return err
	}
	return ferr
}

// lockHolder cannot tell who holds a lock here.
func lockHolder(*os.File) int { return 0 }
