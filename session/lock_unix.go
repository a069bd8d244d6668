//go:build unix

package session

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive advisory lock (flock) on f without waiting.
// The lock belongs to f's open file description: a second open of the same
// file, in this process or another, cannot take it until f is closed (or
// its process dies), and closing f releases it. It returns errLockHeld when
// someone else holds it.
func lockFile(f *os.File) error {
	err := flock(f, unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLockHeld
	}
	return err
}

// lockFileWait takes an exclusive advisory lock (flock) on f, waiting for
// it: for short critical sections shared by processes (the session index).
func lockFileWait(f *os.File) error { return flock(f, unix.LOCK_EX) }

// unlockFile lets go of lockFile's lock on f.
func unlockFile(f *os.File) error { return flock(f, unix.LOCK_UN) }

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
