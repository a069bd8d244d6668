//go:build unix

package regfile_test

import "golang.org/x/sys/unix"

const oNonblock = unix.O_NONBLOCK

func fcntlFlags(fd uintptr) (int, error) { return unix.FcntlInt(fd, unix.F_GETFL, 0) }
