// Package testkit holds the helpers that the tests of more than one package
// would otherwise each write again: the rebound binary built once per test
// run, process liveness (Gone, ReadPID), and planting what a hostile or
// careless user leaves on disk where Rebound expects a regular file (Mkfifo,
// Symlink) with the guard that fails, instead of hangs, a call blocked on it
// (Returns).
//
// What belongs here: a helper with no knowledge of any one package's types,
// used by the tests of two packages or more. What does not: fixtures and
// fakes of one package (they stay in its _test.go files), and anything the
// shipped binary needs. Only _test.go files import it
// (TestNotInTheShippedBinary checks cmd/rebound).
package testkit

import (
	"fmt"
	"maps"
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

// DemoGetenv is the environment a demo played in a test reads: vars, and
// REBOUND_DEMO_CHILD naming the binary ReboundBinary built, so that the demo's
// agent is the real command (cmd/rebound's demo subcommand and
// internal/demo's tests both play it).
func DemoGetenv(tb testing.TB, vars map[string]string) func(string) string {
	tb.Helper()
	m := map[string]string{"REBOUND_DEMO_CHILD": ReboundBinary(tb)}
	maps.Copy(m, vars)
	return func(k string) string { return m[k] }
}

// DirNames lists the names in dir, sorted, to catch what a test left
// behind (temporary files, directories).
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
