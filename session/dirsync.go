package session

import (
	"errors"
	"os"
	"runtime"
	"syscall"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// syncDir makes dir's entries (a log created, renamed or removed) durable.
// Windows refuses to flush a directory (microsoft/go#1907: "Access is
// denied"); NTFS journals its directory entries itself, so there the
// refusal is not a failure. Everywhere else every error is one.
func syncDir(dir string) error {
	d, err := regfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := dirSync(d); err != nil && !dirSyncRefused(runtime.GOOS, err) {
		return err
	}
	return nil
}

// dirSync is (*os.File).Sync; tests replace it.
var dirSync = (*os.File).Sync

// Windows's answers when a directory handle cannot be flushed:
// ERROR_ACCESS_DENIED, ERROR_INVALID_FUNCTION. Spelt as numbers, so the
// logic builds and is tested on every platform.
const (
	winErrorAccessDenied    = syscall.Errno(5)
	winErrorInvalidFunction = syscall.Errno(1)
)

// dirSyncRefused reports whether err is goos refusing to flush a directory,
// which is then skipped. Only Windows refuses; a Unix error (EIO, ENOSPC,
// EACCES alike) always counts.
func dirSyncRefused(goos string, err error) bool {
	if goos != "windows" {
		return false
	}
	var errno syscall.Errno
	return errors.As(err, &errno) && (errno == winErrorAccessDenied || errno == winErrorInvalidFunction)
}
