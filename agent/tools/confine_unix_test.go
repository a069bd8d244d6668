//go:build unix

package tools_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// confineTree is a workspace proj with a file, a directory and a secret
// outside it.
func confineTree(t *testing.T) (proj, outside string) {
	t.Helper()
	base := t.TempDir()
	proj, outside = filepath.Join(base, "proj"), filepath.Join(base, "outside")
	mkTree(t, base, map[string]string{
		"proj/a.txt":      "inside\n",
		"proj/sub/f.txt":  "old\n",
		"outside/secret":  "SECRET\n",
		"outside/f.txt":   "outside\n",
		"outside/d/keep":  "",
		"proj/sub/g/keep": "",
	})
	return proj, outside
}

// swapForLink replaces path with a symlink to target, as a hostile process
// racing the agent would.
func swapForLink(t *testing.T, path, target string) {
	t.Helper()
	if err := os.Rename(path, path+".moved"); err != nil {
		t.Fatal(err)
	}
	testkit.Symlink(t, target, path)
}

// The path is checked before the permission prompt and written after it:
// a directory on the way swapped for a link meanwhile must not carry the
// write outside.
func TestLocalFS_WriteAfterDirSwappedForLink(t *testing.T) {
	for _, target := range []string{"../outside", "abs"} {
		t.Run(target, func(t *testing.T) {
			proj, outside := confineTree(t)
			if target == "abs" {
				target = outside
			}
			ws := tools.NewWorkspace(proj)
			path, err := ws.Resolve("sub/f.txt")
			if err != nil {
				t.Fatal(err)
			}
			swapForLink(t, filepath.Join(proj, "sub"), target)
			err = tools.LocalFS{WS: ws}.WriteTextFile(t.Context(), path, "pwned\n")
			if err == nil || !strings.Contains(err.Error(), "outside the workspace") {
				t.Errorf("WriteTextFile = %v, want refused as outside the workspace", err)
			}
			checkFile(t, filepath.Join(outside, "f.txt"), "outside\n", 0o644)
		})
	}
}

// Between resolving the path and writing, the tree changes again: the
// kernel, through os.Root, refuses to leave the workspace.
func TestLocalFS_WriteRacesAfterResolve(t *testing.T) {
	tests := []struct {
		name, swap, target, path string
	}{
		{"directory for a relative link", "sub", "../outside", "sub/f.txt"},
		{"directory for an absolute link", "sub", "OUTSIDE", "sub/f.txt"},
		{"directory for a link, new file", "sub", "../outside", "sub/new.txt"},
		{"directory for a link, new subdirectory", "sub/g", "../../outside/d", "sub/g/new/x.txt"},
		{"file for a link", "sub/f.txt", "../../outside/f.txt", "sub/f.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proj, outside := confineTree(t)
			target := strings.ReplaceAll(tt.target, "OUTSIDE", outside)
			tools.SetRaceHooks(t, func() { swapForLink(t, filepath.Join(proj, tt.swap), target) }, nil)
			err := local(proj).WriteTextFile(t.Context(), filepath.Join(proj, tt.path), "pwned\n")
			if err == nil {
				t.Error("WriteTextFile succeeded")
			}
			checkFile(t, filepath.Join(outside, "f.txt"), "outside\n", 0o644)
			for _, p := range []string{"new.txt", "d/new"} {
				if _, err := os.Lstat(filepath.Join(outside, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s was created outside the workspace: %v", p, err)
				}
			}
		})
	}
}

func TestLocalFS_ReadRacesAfterResolve(t *testing.T) {
	for _, target := range []string{"../outside/secret", "ABS"} {
		t.Run(target, func(t *testing.T) {
			proj, outside := confineTree(t)
			target := strings.ReplaceAll(target, "ABS", filepath.Join(outside, "secret"))
			tools.SetRaceHooks(t, func() { swapForLink(t, filepath.Join(proj, "a.txt"), target) }, nil)
			got, err := local(proj).ReadTextFile(t.Context(), filepath.Join(proj, "a.txt"))
			if err == nil || strings.Contains(got+err.Error(), "SECRET") {
				t.Errorf("ReadTextFile = %q, %v; want an error, and not the secret", got, err)
			}
		})
	}
}

// A symlink inside the workspace is written through, even one with an
// absolute target (which os.Root alone would refuse).
func TestLocalFS_WriteThroughAbsoluteLinkInside(t *testing.T) {
	proj, _ := confineTree(t)
	testkit.Symlink(t, filepath.Join(proj, "sub", "f.txt"), filepath.Join(proj, "abs-link"))
	testkit.Symlink(t, filepath.Join(proj, "sub", "made.txt"), filepath.Join(proj, "dangling"))
	for _, tt := range []struct{ link, target string }{{"abs-link", "sub/f.txt"}, {"dangling", "sub/made.txt"}} {
		if err := local(proj).WriteTextFile(t.Context(), filepath.Join(proj, tt.link), "new\n"); err != nil {
			t.Fatal(err)
		}
		checkFile(t, filepath.Join(proj, tt.target), "new\n", 0o644)
		if fi, err := os.Lstat(filepath.Join(proj, tt.link)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s was replaced: %v, %v", tt.link, fi, err)
		}
	}
}

func TestLocalFS_NoWorkspace(t *testing.T) {
	proj, _ := confineTree(t)
	if _, err := (tools.LocalFS{}).ReadTextFile(t.Context(), filepath.Join(proj, "a.txt")); err == nil {
		t.Error("ReadTextFile without a workspace succeeded")
	}
	if err := (tools.LocalFS{}).WriteTextFile(t.Context(), filepath.Join(proj, "a.txt"), "x"); err == nil {
		t.Error("WriteTextFile without a workspace succeeded")
	}
}

// A FIFO in the workspace blocks whoever opens it for reading until a
// writer comes; read_file, edit_file (which reads first) and write_file
// refuse it instead.
func TestLocalFS_FIFO(t *testing.T) {
	proj, _ := confineTree(t)
	fifo := filepath.Join(proj, "pipe")
	testkit.Mkfifo(t, fifo)
	testkit.Symlink(t, "pipe", filepath.Join(proj, "pipe-link"))
	for _, p := range []string{"pipe", "pipe-link"} {
		testkit.Returns(t, "opening a FIFO", func() error {
			_, err := local(proj).ReadTextFile(t.Context(), filepath.Join(proj, p))
			if want := "is a named pipe (FIFO), not a regular file; read_file reads text files only"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ReadTextFile(%s) = %v, want %q", p, err, want)
			}
			err = local(proj).WriteTextFile(t.Context(), filepath.Join(proj, p), "x")
			if want := "is a named pipe (FIFO), not a regular file; write_file writes text files only"; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("WriteTextFile(%s) = %v, want %q", p, err, want)
			}
			return nil
		}, fifo)
	}
}

// A file swapped for a FIFO after its type was checked: the open does not
// block, and the check after it refuses.
func TestLocalFS_SwappedForFIFOAfterCheck(t *testing.T) {
	proj, _ := confineTree(t)
	path := filepath.Join(proj, "a.txt")
	tools.SetRaceHooks(t, nil, func(string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		testkit.Mkfifo(t, path)
	})
	testkit.Returns(t, "opening a FIFO", func() error {
		_, err := local(proj).ReadTextFile(t.Context(), path)
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("ReadTextFile = %v, want a named pipe refused", err)
		}
		return nil
	}, path)
}

// .gitignore -> /dev/stdin made find_files read the agent's own ACP input;
// a FIFO there blocked the walk. Ignore files that are not regular files
// are not read (git does not follow a symlinked .gitignore either), and
// non-regular files are not searched.
func TestWalk_FIFOsDoNotBlock(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	root := filepath.Join(repo, "root")
	mkTree(t, base, map[string]string{
		"repo/.git/info/":     "",
		"repo/root/a.go":      "needle\n",
		"repo/root/sub/b.go":  "needle\n",
		"repo/root/sub/c.txt": "needle\n",
		"repo/root/d/e.go":    "needle\n",
	})
	outsideFIFO := filepath.Join(base, "stdin")
	fifos := []string{outsideFIFO, filepath.Join(repo, ".gitignore"), filepath.Join(repo, ".git/info/exclude"),
		filepath.Join(root, "sub/.gitignore"), filepath.Join(root, "data.fifo")}
	testkit.Mkfifo(t, outsideFIFO)
	for _, p := range fifos[1:] {
		testkit.Mkfifo(t, p)
	}
	testkit.Symlink(t, outsideFIFO, filepath.Join(root, ".gitignore"))
	testkit.Symlink(t, "../data.fifo", filepath.Join(root, "d", "link.go"))

	// A file that becomes a FIFO after the walk checked its type.
	late := filepath.Join(root, "sub", "late.go")
	mkTree(t, root, map[string]string{"sub/late.go": "needle\n"})
	fifos = append(fifos, late)
	tools.SetRaceHooks(t, nil, func(name string) {
		if filepath.Base(name) == "late.go" {
			os.Remove(late)
			testkit.Mkfifo(t, late)
		}
	})

	testkit.Returns(t, "opening a FIFO", func() error {
		paths, _, err := tools.Find(t.Context(), root, "*.go", 0)
		if err != nil {
			t.Error(err)
		}
		if got, want := strings.Join(rels(t, root, paths), " "), "a.go d/e.go sub/b.go sub/late.go"; got != want {
			t.Errorf("Find = %s, want %s", got, want)
		}
		ms, _, err := tools.Search(t.Context(), root, regexp.MustCompile("needle"), "", 0)
		if err != nil {
			t.Error(err)
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.Path)
		}
		if got, want := strings.Join(rels(t, root, got), " "), "a.go d/e.go sub/b.go sub/c.txt"; got != want {
			t.Errorf("Search found %s, want %s", got, want)
		}
		_, _, err = tools.Search(t.Context(), filepath.Join(root, "data.fifo"), regexp.MustCompile("x"), "", 0)
		if want := "is a named pipe (FIFO), not a regular file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Search of a FIFO = %v, want %q", err, want)
		}
		return nil
	}, fifos...)
}

func TestWorkspace_ReadRegularFileFIFO(t *testing.T) {
	proj, _ := confineTree(t)
	fifo := filepath.Join(proj, "AGENTS.md")
	testkit.Mkfifo(t, fifo)
	testkit.Returns(t, "opening a FIFO", func() error {
		_, _, err := tools.NewWorkspace(proj).ReadRegularFile("AGENTS.md", 100)
		if want := "AGENTS.md is a named pipe (FIFO), not a regular file"; err == nil || err.Error() != want {
			t.Errorf("ReadRegularFile = %v, want %q", err, want)
		}
		return nil
	}, fifo)
}
