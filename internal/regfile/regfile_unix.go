//go:build unix

package regfile

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	oNonblock  = unix.O_NONBLOCK
	oNofollow  = unix.O_NOFOLLOW
	oDirectory = unix.O_DIRECTORY
)

// links is how many names the file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// setBlocking clears the O_NONBLOCK the open used, now that f is known to be
// a regular file (which the runtime's poller does not take, so it never
// relied on it).
func setBlocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
