package filelock

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// holder returns the pid of the process holding a flock on f's file, as
// /proc/locks reports it, or 0 if it cannot tell.
func holder(f *os.File) int {
	fi, err := f.Stat()
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer locks.Close()
	// A line reads "1: FLOCK  ADVISORY  WRITE 30135 fe:00:9986943 0 EOF":
	// the holder's pid, then major:minor:inode. Some file systems report
	// another device number than stat does, so an inode alone is accepted
	// when it is the only match.
	dev := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
	ino := ":" + strconv.FormatUint(uint64(st.Ino), 10)
	byIno, matches := 0, 0
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue // also skips "->" lines: waiters, not holders
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		if fields[5] == dev {
			return pid
		}
		if strings.HasSuffix(fields[5], ino) {
			byIno, matches = pid, matches+1
		}
	}
	if matches == 1 {
		return byIno
	}
	return 0
}
