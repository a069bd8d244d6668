package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// The command's exit codes and words for what it refuses, up to where it
// would build (that is .ci/run's `go run ./scripts/release check`).
func TestRun_Refusals(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, c := range []struct {
		args       []string
		code       int
		wantStderr string
	}{
		{nil, 2, "Usage:"},
		{[]string{"nope"}, 2, "Usage:"},
		{[]string{"check", "-h"}, 0, "-out string"},
		{[]string{"check", "-targets", "all"}, 2, "flag provided but not defined: -targets"},
		{[]string{"build", "x"}, 2, `release build: unexpected argument "x"`},
		{[]string{"build", "-targets", "bogus", "-out", empty}, 2, `release build: unknown platform "bogus"`},
		{[]string{"build", "-out", filepath.Join(root, "scripts")}, 1, "release build: output directory"},
		{[]string{"check", "-out", empty}, 1, "release check: "},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.wantStderr) || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", c.args, code, stdout.String(), stderr.String(), c.code, c.wantStderr)
		}
	}
}
