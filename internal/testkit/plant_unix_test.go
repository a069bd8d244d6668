//go:build unix

package testkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fatalTB records a Fatalf instead of ending the goroutine, so that a
// failure of the helper under test can be seen from the outside.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}
func (f *fatalTB) Fatal(args ...any) { f.failed = fmt.Sprint(args...) }

func TestReturns_PassesTheErrorOn(t *testing.T) {
	want := errors.New("refused")
	if got := Returns(t, "a call", func() error { return want }); got != want {
		t.Errorf("Returns = %v, want fn's own error %v", got, want)
	}
}

// A call blocked opening a FIFO fails the test once the guard is up, and is
// let go (the FIFO, found under a directory named in release, is opened for
// writing), so no goroutine outlives the test.
func TestReturns_BlockedOnAFIFO(t *testing.T) {
	defer func(g time.Duration) { guard = g }(guard)
	guard = 50 * time.Millisecond
	dir := t.TempDir()
	fifo := filepath.Join(dir, "sub", "pipe")
	Must(t, os.Mkdir(filepath.Dir(fifo), 0o700))
	Mkfifo(t, fifo)
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("Mkfifo made %v (%v), want a named pipe", fi, err)
	}
	var ftb fatalTB
	ftb.TB = t
	opened := false
	Returns(&ftb, "reading the pipe", func() error {
		f, err := os.Open(fifo) // blocks until a writer comes
		if err == nil {
			opened = true
			f.Close()
		}
		return err
	}, dir)
	if !opened {
		t.Error("the blocked open was not let go")
	}
	if want := "reading the pipe blocked (still running after 50ms)"; ftb.failed != want {
		t.Errorf("Returns failed the test with %q, want %q", ftb.failed, want)
	}
}

func TestSymlinkAndMust(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	Symlink(t, "target", link)
	if got, err := os.Readlink(link); err != nil || got != "target" {
		t.Errorf("Readlink = %q, %v; want target", got, err)
	}
	var ftb fatalTB
	ftb.TB = t
	Symlink(&ftb, "target", link) // it exists
	if ftb.failed == "" {
		t.Error("Symlink over an existing name did not fail the test")
	}
}
