//go:build unix

package testkit

import (
	"syscall"
	"testing"
)

// Mkfifo makes a named pipe at path, or fails the test. Tests plant one
// where Rebound expects a regular file (an open of it blocks until a writer
// comes), or read one to learn, without polling, that a command got so far.
func Mkfifo(tb testing.TB, path string) {
	tb.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		tb.Fatal(err)
	}
}
