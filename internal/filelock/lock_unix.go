//go:build unix

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const supported = true

// tryLock: flock on f's open file description, which a second open of the
// file does not share.
func tryLock(f *os.File) error {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrHeld
	}
	return err
}

func lock(f *os.File) error { return flock(f, unix.LOCK_EX) }

func unlock(f *os.File) error { return flock(f, unix.LOCK_UN) }

// flock applies how to f's open file description, again when a signal
// interrupts it.
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Flock(int(fd), how)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return lerr
}
