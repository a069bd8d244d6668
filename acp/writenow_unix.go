//go:build unix

package acp

import (
	"io"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// writeNowLimit is the longest line written without the writer goroutine:
// a pipe that polls writable has room for that much. Linux reports a pipe
// writable while a page of it is free; POSIX only promises PIPE_BUF, whose
// floor is 512 bytes (macOS's value). A chunk's update is a few hundred
// bytes; longer lines take the goroutine, as every line did before.
var writeNowLimit = func() int {
	if runtime.GOOS == "linux" {
		return 4096
	}
	return 512
}()

// writeNowFunc returns, for an *os.File, a function that writes p if the
// file takes it without blocking, and otherwise writes nothing and returns
// false; nil for other writers. It lets the caller of WriteLine write an
// idle stream's line itself instead of waking the writer goroutine for it:
// at a model's pace that hand-off was most of a chunk's cost.
//
// A pipe (stdout as an editor starts us) is written at once when it is
// empty, where the system tells (Linux): the editor has caught up, and an
// empty pipe has room for writeNowLimit bytes. When it is not, the line
// goes to the writer goroutine, so a burst is still written in a few large
// writes instead of one per line. Elsewhere a zero-timeout poll says
// whether the file is writable: a pipe or a socket then takes a line of up
// to writeNowLimit bytes without blocking, and a regular file never blocks
// for long. Only this process writes the stream (one line at a time, as the
// writing flag allows), so the room seen is still there for the write.
func writeNowFunc(w io.Writer) func(p []byte) (bool, error) {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fifo := false
	rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		fifo = unix.Fstat(int(fd), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO
	})
	fds := make([]unix.PollFd, 1) // the stream's writing flag serializes calls
	var ready bool
	poll := func(fd uintptr) {
		if fifo {
			if n, ok := unreadInPipe(int(fd)); ok {
				// Empty: the editor has read all and waits for more, and
				// the pipe has room. Not empty: it lags (a burst), and
				// the writer goroutine will batch what piles up.
				ready = n == 0
				return
			}
		}
		fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
		n, err := unix.Poll(fds, 0)
		// POLLERR, POLLHUP or POLLNVAL: the write fails at once, which is
		// as good as writable.
		ready = err == nil && n > 0
	}
	return func(p []byte) (bool, error) {
		if len(p) > writeNowLimit {
			return false, nil
		}
		if err := rc.Control(poll); err != nil || !ready {
			return false, nil
		}
		_, err := f.Write(p)
		return true, err
	}
}
