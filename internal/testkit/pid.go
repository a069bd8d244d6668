package testkit

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ReadPID reads the process ID a test's command wrote to file.
func ReadPID(tb testing.TB, file string) int {
	tb.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		tb.Fatalf("reading the pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Fatalf("pid file %s: %v", file, err)
	}
	return pid
}
