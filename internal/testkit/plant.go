package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// guard is how long Returns lets a call run before it counts as blocked: a
// bound on a failure, never a wait a passing test sits through, since the
// calls it guards return at once when the code is right. A variable only so
// that this package's own test can see a failure quickly.
var guard = 10 * time.Second

// Returns runs fn and returns its error, or fails the test if fn has not
// returned within a generous guard (10s). A call blocked in open(2) on a FIFO never returns
// by itself, so on a failure every FIFO at or under the paths in release is
// opened for writing (O_RDWR, which does not block), to let it go before the
// test ends; fn is waited for, so nothing it does outlives the test.
func Returns(tb testing.TB, what string, fn func() error, release ...string) error {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(guard):
	}
	for _, p := range release {
		filepath.WalkDir(p, func(p string, e fs.DirEntry, _ error) error {
			if e != nil && e.Type()&fs.ModeNamedPipe != 0 {
				if w, err := os.OpenFile(p, os.O_RDWR, 0); err == nil {
					w.Close()
				}
			}
			return nil
		})
	}
	<-done
	tb.Fatalf("%s blocked (still running after %v)", what, guard)
	return nil
}

// Symlink makes link a symbolic link to target, or fails the test.
func Symlink(tb testing.TB, target, link string) {
	tb.Helper()
	if err := os.Symlink(target, link); err != nil {
		tb.Fatal(err)
	}
}

// Must fails the test if err is not nil: for a setup step whose only
// outcome worth a line is that it worked.
func Must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}
