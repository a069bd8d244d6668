package acp

import "golang.org/x/sys/unix"

// unreadInPipe is how many bytes wait in the pipe fd, either end of it
// (FIONREAD, which Linux spells TIOCINQ).
func unreadInPipe(fd int) (int, bool) {
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
	return n, err == nil
}
