//go:build !unix

package testkit

import "testing"

// Mkfifo skips the test: this platform has no named pipes.
func Mkfifo(tb testing.TB, _ string) {
	tb.Helper()
	tb.Skip("no FIFOs on this platform")
}
