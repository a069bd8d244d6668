package demo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
)

// A workspace that could not be made whole leaves nothing behind; one
// whose session started keeps only its temporary state directory.
func TestWorkspace_RemovesWhatItMade(t *testing.T) {
	tmp := t.TempDir()
	for _, k := range []string{"TMPDIR", "TMP", "TEMP"} { // os.TempDir, Unix and Windows
		t.Setenv(k, tmp)
	}

	bad := &definition{Recovery: map[string]any{"x": nil}} // null has no TOML form
	if _, err := newWorkspace("", bad, "bad.json"); err == nil {
		t.Fatal("newWorkspace: no error for a config with null")
	}
	if left := testkit.DirNames(t, tmp); len(left) != 0 {
		t.Errorf("a failed workspace left %v", left)
	}

	good := &definition{Project: map[string]string{"sub/a.md": "x"}}
	ws, err := newWorkspace("", good, "good.json")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(ws.project, "sub", "a.md")); err != nil || string(b) != "x" {
		t.Errorf("project file: %q, %v", b, err)
	}
	if len(testkit.DirNames(t, tmp)) != 3 {
		t.Errorf("want state, config and project in %s, got %v", tmp, testkit.DirNames(t, tmp))
	}
	ws.keepState = true
	ws.remove()
	if left := testkit.DirNames(t, tmp); len(left) != 1 || filepath.Join(tmp, left[0]) != ws.state {
		t.Errorf("after remove with a session: %v, want only the state %s", left, ws.state)
	}
}
