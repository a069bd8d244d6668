package filelock

import (
	"os"
	"testing"
)

// tempDir is t.TempDir without its failure on clean-up under Wine 8, which
// cannot run os.RemoveAll's POSIX-semantics delete ("Invalid function"):
// the smoke script runs these tests there.
func tempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "filelock-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// TempDir is tempDir for the black-box tests.
var TempDir = tempDir
