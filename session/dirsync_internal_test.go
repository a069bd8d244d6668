package session

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"syscall"
	"testing"
)

// Windows's refusal to flush a directory is skipped, and nothing else is:
// every other error, and every error on every other platform, still fails
// the sync. Pure logic, so it runs here whatever the host.
func TestDirSyncRefused(t *testing.T) {
	wrap := func(err error) error { return &os.PathError{Op: "sync", Path: `C:\state\sessions`, Err: err} }
	for _, tt := range []struct {
		goos string
		err  error
		want bool
	}{
		{"windows", wrap(winErrorAccessDenied), true},
		{"windows", wrap(winErrorInvalidFunction), true},
		{"windows", winErrorAccessDenied, true},
		{"windows", wrap(syscall.Errno(112)), false}, // ERROR_DISK_FULL
		{"windows", wrap(syscall.Errno(23)), false},  // ERROR_CRC
		{"windows", wrap(fs.ErrClosed), false},
		{"windows", errors.New("access denied"), false},
		{"linux", wrap(syscall.EACCES), false},
		{"darwin", wrap(syscall.EIO), false},
	} {
		if got := dirSyncRefused(tt.goos, tt.err); got != tt.want {
			t.Errorf("dirSyncRefused(%q, %v) = %v, want %v", tt.goos, tt.err, got, tt.want)
		}
	}
	// Off Windows no errno at all is skipped.
	for _, goos := range []string{"linux", "darwin", "freebsd", "openbsd", "netbsd", "android", "ios", "plan9"} {
		for n := range 4096 {
			if err := wrap(syscall.Errno(n)); dirSyncRefused(goos, err) {
				t.Fatalf("dirSyncRefused(%q, %v) = true: a %s directory sync error was skipped", goos, err, goos)
			}
		}
	}
}

// syncDir returns the sync's error here, whatever it is: skipping is for
// Windows alone.
func TestSyncDir_FailsOnSyncError(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows skips its refusal; see TestSyncDir_WindowsRefusalSkipped")
	}
	for _, injected := range []error{winErrorAccessDenied, syscall.EACCES, syscall.EIO} {
		orig := dirSync
		dirSync = func(*os.File) error { return &os.PathError{Op: "sync", Path: "d", Err: injected} }
		err := syncDir(t.TempDir())
		dirSync = orig
		if !errors.Is(err, injected) {
			t.Errorf("syncDir with a sync that fails with %v: err = %v", injected, err)
		}
	}
	if err := syncDir(t.TempDir()); err != nil {
		t.Fatalf("syncDir: %v", err)
	}
}
