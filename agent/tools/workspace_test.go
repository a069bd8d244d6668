package tools_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
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
	testkit.Symlink(t, filepath.Join(outside, "passwd"), filepath.Join(proj, "evil-file"))
	testkit.Symlink(t, filepath.Join(outside, "dir"), filepath.Join(proj, "evil-dir"))
	testkit.Symlink(t, filepath.Join(outside, "missing"), filepath.Join(proj, "dangling"))
	testkit.Symlink(t, "src", filepath.Join(proj, "good-dir"))
	// A symlinked spelling of the whole workspace, as /tmp is on macOS.
	alias := filepath.Join(base, "alias")
	testkit.Symlink(t, proj, alias)

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
	testkit.Symlink(t, "b", filepath.Join(proj, "a"))
	testkit.Symlink(t, "a", filepath.Join(proj, "b"))
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

// A dangling link's target is followed the way the kernel follows it: ".."
// after a linked directory is the parent of where that link leads, not of
// the link. Cleaning "cfg/../.bash_login" lexically would put it inside.
func TestWorkspace_ResolveDotDotAfterLink(t *testing.T) {
	base := t.TempDir()
	proj, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	mkTree(t, base, map[string]string{"proj/": "", "home/.config/": "", "proj/inner/": ""})
	testkit.Symlink(t, filepath.Join(home, ".config"), filepath.Join(proj, "cfg"))
	testkit.Symlink(t, "cfg/../.bash_login", filepath.Join(proj, "notes.txt"))
	testkit.Symlink(t, "cfg/../.bash_login/x", filepath.Join(proj, "deeper"))
	// Inside: ".." after a link to a directory inside the workspace.
	testkit.Symlink(t, "inner", filepath.Join(proj, "in"))
	testkit.Symlink(t, "in/../made.txt", filepath.Join(proj, "ok.txt"))
	ws := tools.NewWorkspace(proj)

	for _, p := range []string{"notes.txt", "deeper"} {
		if got, err := ws.Resolve(p); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Errorf("Resolve(%q) = %q, %v; want it refused as outside the workspace", p, got, err)
		}
		if got, err := ws.Target(p); err == nil {
			t.Errorf("Target(%q) = %q, want an error", p, got)
		}
	}
	got, err := ws.Target("ok.txt")
	if want := filepath.Join(realPath(t, proj), "made.txt"); err != nil || got != want {
		t.Errorf("Target(ok.txt) = %q, %v; want %q", got, err, want)
	}
	// A path as given is cleaned first, and the cleaned path is the one
	// used: this names proj/.bash_login, whatever cfg is.
	got, err = ws.Resolve("cfg/../.bash_login")
	if want := filepath.Join(proj, ".bash_login"); err != nil || got != want {
		t.Errorf("Resolve(cfg/../.bash_login) = %q, %v; want %q", got, err, want)
	}
}

func TestWorkspace_Target(t *testing.T) {
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	mkTree(t, base, map[string]string{"proj/src/main.go": "package main", "outside/x": ""})
	testkit.Symlink(t, "src/main.go", filepath.Join(proj, "link.go"))
	testkit.Symlink(t, filepath.Join(proj, "src"), filepath.Join(proj, "abs-src"))
	testkit.Symlink(t, "src/new.go", filepath.Join(proj, "dangling.go"))
	testkit.Symlink(t, filepath.Join(base, "outside"), filepath.Join(proj, "out"))
	testkit.Symlink(t, "src/main.go/../x", filepath.Join(proj, "up-from-file"))
	alias := filepath.Join(base, "alias")
	testkit.Symlink(t, proj, alias)
	ws := tools.NewWorkspace(alias) // the workspace as a symlinked spelling
	real := realPath(t, proj)

	tests := []struct{ path, want string }{
		{"src/main.go", filepath.Join(real, "src/main.go")},
		{"link.go", filepath.Join(real, "src/main.go")},
		{"abs-src/main.go", filepath.Join(real, "src/main.go")},
		{"dangling.go", filepath.Join(real, "src/new.go")},
		{"new/dir/file.go", filepath.Join(real, "new/dir/file.go")},
		{filepath.Join(alias, "link.go"), filepath.Join(real, "src/main.go")},
		{"out/x", ""},
		{"up-from-file", ""}, // the kernel cannot go up from a file
	}
	for _, tt := range tests {
		got, err := ws.Target(tt.path)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Target(%q) = %q, want an error", tt.path, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Target(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
		}
	}
}

// realPath is dir with every symlink resolved (t.TempDir may be under one,
// as on macOS).
func realPath(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestWorkspace_ReadRegularFile(t *testing.T) {
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	mkTree(t, base, map[string]string{
		"proj/AGENTS.md":        "0123456789",
		"proj/docs/agents.md":   "linked",
		"proj/dir/":             "",
		"home/.aws/credentials": "aws_secret_access_key=SECRET",
	})
	testkit.Symlink(t, "docs/agents.md", filepath.Join(proj, "inside.md"))
	testkit.Symlink(t, filepath.Join(base, "home/.aws/credentials"), filepath.Join(proj, "evil.md"))
	testkit.Symlink(t, "cfg/../.aws/credentials", filepath.Join(proj, "evil2.md"))
	testkit.Symlink(t, filepath.Join(base, "home"), filepath.Join(proj, "cfg"))
	ws := tools.NewWorkspace(proj)

	tests := []struct {
		path      string
		limit     int64
		want      string
		truncated bool
		errHas    string
	}{
		{path: "AGENTS.md", limit: 100, want: "0123456789"},
		{path: "AGENTS.md", limit: 10, want: "0123456789"},
		{path: "AGENTS.md", limit: 4, want: "0123", truncated: true},
		{path: "inside.md", limit: 100, want: "linked"},
		{path: "evil.md", limit: 100, errHas: "outside the workspace"},
		{path: "evil2.md", limit: 100, errHas: "outside the workspace"},
		{path: "dir", limit: 100, errHas: "dir is a directory, not a regular file"},
		{path: "missing.md", limit: 100, errHas: "no such file"},
	}
	for _, tt := range tests {
		got, truncated, err := ws.ReadRegularFile(tt.path, tt.limit)
		if tt.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errHas) || strings.Contains(string(got)+err.Error(), "SECRET") {
				t.Errorf("ReadRegularFile(%s) = %q, %v; want an error containing %q", tt.path, got, err, tt.errHas)
			}
			continue
		}
		if err != nil || string(got) != tt.want || truncated != tt.truncated {
			t.Errorf("ReadRegularFile(%s, %d) = %q, %v, %v; want %q, %v", tt.path, tt.limit, got, truncated, err, tt.want, tt.truncated)
		}
	}
	if _, _, err := ws.ReadRegularFile("missing.md", 1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadRegularFile of a missing file = %v, want fs.ErrNotExist", err)
	}
}
