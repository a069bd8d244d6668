//go:build unix

package regfile_test

import (
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

const oNonblock = unix.O_NONBLOCK

func fcntlFlags(fd uintptr) (int, error) { return unix.FcntlInt(fd, unix.F_GETFL, 0) }

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
