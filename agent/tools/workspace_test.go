package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
)

// mkTree creates files (path → content) under dir; a path ending in "/" is
// an empty directory.
func mkTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestWorkspace_Resolve(t *testing.T) {
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	extra := filepath.Join(base, "lib")
	outside := filepath.Join(base, "outside")
	mkTree(t, base, map[string]string{
		"proj/README.md":    "hi",
		"proj/src/main.go":  "package main",
		"projx/secret.txt":  "no", // shares a prefix with proj
		"lib/util.go":       "package lib",
		"outside/passwd":    "root",
		"outside/dir/x.txt": "x",
	})
	symlink(t, filepath.Join(outside, "passwd"), filepath.Join(proj, "evil-file"))
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(proj, "evil-dir"))
	symlink(t, filepath.Join(outside, "missing"), filepath.Join(proj, "dangling"))
	symlink(t, "src", filepath.Join(proj, "good-dir"))
	// A symlinked spelling of the whole workspace, as /tmp is on macOS.
	alias := filepath.Join(base, "alias")
	symlink(t, proj, alias)

	ws := tools.NewWorkspace(proj, extra)

	tests := []struct {
		name, path string
		want       string // "" means an error is expected
		errHas     string
	}{
		{name: "relative", path: "README.md", want: filepath.Join(proj, "README.md")},
		{name: "relative nested", path: "src/main.go", want: filepath.Join(proj, "src/main.go")},
		{name: "absolute", path: filepath.Join(proj, "src/main.go"), want: filepath.Join(proj, "src/main.go")},
		{name: "cleaned", path: "./src/../README.md", want: filepath.Join(proj, "README.md")},
		{name: "cwd itself", path: ".", want: proj},
		{name: "new file in new subdir", path: "new/deeper/file.go", want: filepath.Join(proj, "new/deeper/file.go")},
		{name: "additional root", path: filepath.Join(extra, "util.go"), want: filepath.Join(extra, "util.go")},
		{name: "new file in additional root", path: filepath.Join(extra, "new.go"), want: filepath.Join(extra, "new.go")},
		{name: "symlink inside, kept as given", path: "good-dir/main.go", want: filepath.Join(proj, "good-dir/main.go")},
		{name: "path through aliased cwd", path: filepath.Join(alias, "README.md"), want: filepath.Join(alias, "README.md")},
		{name: "dot-dot escape", path: "../outside/passwd", errHas: "is outside the workspace"},
		{name: "absolute outside", path: filepath.Join(outside, "passwd"), errHas: "is outside the workspace"},
		{name: "prefix sibling is not inside", path: filepath.Join(base, "projx/secret.txt"), errHas: "is outside the workspace"},
		{name: "symlinked file escape", path: "evil-file", errHas: "through a symlink"},
		{name: "symlinked dir escape", path: "evil-dir/x.txt", errHas: "through a symlink"},
		{name: "new file under symlinked dir escape", path: "evil-dir/new/file.txt", errHas: "through a symlink"},
		{name: "dangling symlink to outside", path: "dangling", errHas: "through a symlink"},
		{name: "empty", path: "", errHas: "path is empty"},
		{name: "blank", path: "  ", errHas: "path is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ws.Resolve(tt.path)
			if tt.errHas != "" {
				if err == nil {
					t.Fatalf("Resolve(%q) = %q, want an error containing %q", tt.path, got, tt.errHas)
				}
				if !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("Resolve(%q) error = %q, want it to contain %q", tt.path, err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tt.path, err)
			}
			if got != tt.want {
				t.Errorf("Resolve(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

func TestWorkspace_ResolveErrorNamesRoots(t *testing.T) {
	ws := tools.NewWorkspace("/home/u/proj", "/home/u/lib")
	_, err := ws.Resolve("../etc/passwd")
	want := `path "../etc/passwd" is outside the workspace (/home/u/proj, /home/u/lib); only files under the workspace roots can be used`
	if err == nil || err.Error() != want {
		t.Errorf("Resolve error = %v, want %q", err, want)
	}
}

func TestWorkspace_ResolveSymlinkLoop(t *testing.T) {
	proj := t.TempDir()
	symlink(t, "b", filepath.Join(proj, "a"))
	symlink(t, "a", filepath.Join(proj, "b"))
	ws := tools.NewWorkspace(proj)
	if got, err := ws.Resolve("a"); err == nil {
		t.Errorf("Resolve of a symlink loop = %q, want an error", got)
	}
}

func TestWorkspace_Roots(t *testing.T) {
	ws := tools.NewWorkspace("/w/proj/", "../lib", "/opt/x")
	if got, want := ws.Cwd(), "/w/proj"; got != want {
		t.Errorf("Cwd() = %q, want %q", got, want)
	}
	got := ws.Roots()
	want := []string{"/w/proj", "/w/lib", "/opt/x"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Roots() = %q, want %q", got, want)
	}
	got[0] = "mutated"
	if ws.Roots()[0] != "/w/proj" {
		t.Error("Roots() returned the workspace's own slice")
	}
}

func TestWorkspace_Rel(t *testing.T) {
	ws := tools.NewWorkspace("/w/proj")
	tests := []struct{ in, want string }{
		{"/w/proj/a/b.go", "a/b.go"},
		{"a/b.go", "a/b.go"},
		{"/w/proj", "."},
		{"/w/projx/a.go", "/w/projx/a.go"},
		{"/etc/hosts", "/etc/hosts"},
	}
	for _, tt := range tests {
		if got := ws.Rel(tt.in); got != tt.want {
			t.Errorf("Rel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
