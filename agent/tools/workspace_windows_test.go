package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On Windows a path in the workspace passes whatever its drive letter's
// and names' case and its separators; one beside it does not; and a
// protected name is caught in any case, with NTFS's trailing dots.
func TestWorkspace_WindowsPaths(t *testing.T) {
	// Not t.TempDir: Wine 8 cannot run its clean-up (os.RemoveAll).
	dir, err := os.MkdirTemp("", "rebound-ws-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.MkdirAll(filepath.Join(dir, "proj", "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "proj")
	w := NewWorkspace(root)
	for _, p := range []string{
		strings.ToUpper(root) + `\SRC\new.go`,
		strings.ToLower(root) + `\src\new.go`,
		strings.ReplaceAll(root, `\`, `/`) + `/src/new.go`,
		`src\new.go`,
		`src/new.go`,
	} {
		if _, err := w.Resolve(p); err != nil {
			t.Errorf("Resolve(%q) in %s: %v", p, root, err)
		}
	}
	for _, p := range []string{root + `x\a.go`, strings.ToUpper(root) + `X\a.go`, `..\a.go`, filepath.Join(dir, "a.go")} {
		if _, err := w.Resolve(p); err == nil {
			t.Errorf("Resolve(%q) outside %s passed", p, root)
		}
	}
	for _, p := range []string{`.GIT\config`, strings.ToUpper(root) + `\.Git.\HOOKS\pre-commit`, `.git/config`} {
		if why := w.Protected(p); why == "" {
			t.Errorf("Protected(%q) = \"\", want a reason", p)
		}
	}
}
