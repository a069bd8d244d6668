package demo

import (
	"os"
	"path/filepath"
	"testing"
)

// tempEntries lists what the demo left in the temporary directory.
func tempEntries(t *testing.T, dir string) []string {
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
	if left := tempEntries(t, tmp); len(left) != 0 {
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
	if len(tempEntries(t, tmp)) != 3 {
		t.Errorf("want state, config and project in %s, got %v", tmp, tempEntries(t, tmp))
	}
	ws.keepState = true
	ws.remove()
	if left := tempEntries(t, tmp); len(left) != 1 || filepath.Join(tmp, left[0]) != ws.state {
		t.Errorf("after remove with a session: %v, want only the state %s", left, ws.state)
	}
}
