package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// Windows locks byte ranges, and a locked range cannot be read or written
// through another handle, so every lock here lies far past any file's end
// (locking past the end is allowed) and readers of the file (a session
// list, a load, a bucket's reader) are never refused:
//
//   - the lock itself: one byte at mainOffset;
//   - the holder's name: once it has the lock, the holder also locks the
//     one byte at pidOffset(its pid). Pids are DWORDs, so these bytes lie
//     in [pidBase, pidBase+2^32), below mainOffset. Holder finds the one
//     locked byte there by halving the range with shared locks, which the
//     holder's exclusive byte refuses and other probes do not; the byte is
//     let go with the lock, and with the handle or the process, so it never
//     names a process that is gone.
const (
	mainOffset = 0x7fffffff_fffffffe
	pidBase    = 0x7ffffffe_00000000
)

const supported = true

func pidOffset(pid uint32) uint64 { return pidBase + uint64(pid) }

func tryLock(f *os.File) error {
	err := lockRange(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, mainOffset, 1)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return ErrHeld
	}
	if err != nil {
		return err
	}
	markHolder(f)
	return nil
}

func lock(f *os.File) error {
	if err := lockRange(f, windows.LOCKFILE_EXCLUSIVE_LOCK, mainOffset, 1); err != nil {
		return err
	}
	markHolder(f)
	return nil
}

// markHolder locks the byte that names this process. It waits: only a
// Holder's probe, a few system calls long, can hold it. A failure costs
// only the name (Holder says 0), so it is not the caller's error.
func markHolder(f *os.File) {
	_ = lockRange(f, windows.LOCKFILE_EXCLUSIVE_LOCK, pidOffset(uint32(os.Getpid())), 1)
}

func unlock(f *os.File) error {
	// The name first, so that no one is named who no longer holds the
	// lock. Its error is not the caller's: the name is not there if
	// markHolder failed (Windows says ERROR_NOT_LOCKED, Wine a lock
	// violation), and the handle's close lets go of it anyway.
	_ = unlockRange(f, pidOffset(uint32(os.Getpid())), 1)
	return unlockRange(f, mainOffset, 1)
}

// holder finds the holder's locked byte in [pidBase, pidBase+2^32) by
// halving: a shared lock on a range is refused exactly when the range holds
// it. f must not hold the lock itself.
func holder(f *os.File) int {
	lo, n := uint64(0), uint64(1)<<32
	for n > 1 {
		n /= 2
		held, err := probe(f, pidBase+lo, n)
		if err != nil {
			return 0
		}
		if !held {
			lo += n
		}
	}
	// Nothing may be locked at all (a holder that has not yet named
	// itself, or has just let go): the last byte is checked too.
	if held, err := probe(f, pidBase+lo, 1); err != nil || !held || lo == 0 || uint64(int(lo)) != lo {
		return 0
	}
	return int(lo)
}

// probe reports whether another handle holds an exclusive lock within
// [off, off+n), taking and at once letting go of a shared lock there.
func probe(f *os.File, off, n uint64) (bool, error) {
	err := lockRange(f, windows.LOCKFILE_FAIL_IMMEDIATELY, off, n)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return false, unlockRange(f, off, n)
}

func lockRange(f *os.File, flags uint32, off, n uint64) error {
	return control(f, func(h windows.Handle) error {
		ol := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
		return windows.LockFileEx(h, flags, 0, uint32(n), uint32(n>>32), &ol)
	})
}

func unlockRange(f *os.File, off, n uint64) error {
	return control(f, func(h windows.Handle) error {
		ol := windows.Overlapped{Offset: uint32(off), OffsetHigh: uint32(off >> 32)}
		return windows.UnlockFileEx(h, 0, uint32(n), uint32(n>>32), &ol)
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
