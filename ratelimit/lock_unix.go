//go:build unix

package ratelimit

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockSupported: bucket files are shared under flock.
const lockSupported = true

// tryLock takes an exclusive flock on f's open file description without
// waiting; ok is false when someone else holds it. Closing f releases it,
// and so does the death of its process.
func tryLock(f *os.File) (ok bool, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if lerr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB); lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return false, err
	}
	if errors.Is(lerr, unix.EWOULDBLOCK) {
		return false, nil
	}
	return lerr == nil, lerr
}
