// Package testkit holds helpers that several packages' tests share: the
// rebound binary built once per test run, and process liveness. By
// convention only _test.go files import it; nothing in the shipped binary
// may.
package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// ReboundBinary builds the real rebound command once per test run, as an
// editor would find it on disk. A TestMain calls RemoveBinary after m.Run.
func ReboundBinary(tb testing.TB) string {
	tb.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "rebound-test-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "rebound")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/rebound-agent/rebound/cmd/rebound").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binPath
}

// RemoveBinary removes the binary ReboundBinary built, if it built one, so a
// test run leaves no 16 MB file behind in the temporary directory.
func RemoveBinary() {
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
}
