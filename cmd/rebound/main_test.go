package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binary the e2e tests built, so a test run leaves no
// 16 MB file behind in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
