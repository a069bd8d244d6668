package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

func TestLocalFS_ReadTextFile(t *testing.T) {
	dir := t.TempDir()
	mkTree(t, dir, map[string]string{
		"a.txt":   "hello\n",
		"bin.dat": "PK\x03\x04\x00\x00",
		"sub/":    "",
	})
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", tools.MaxReadFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       string
		errHas     string
	}{
		{name: "text", path: "a.txt", want: "hello\n"},
		{name: "binary", path: "bin.dat", errHas: "is a binary file; read_file reads text only"},
		{name: "missing", path: "nope.txt", errHas: "does not exist"},
		{name: "directory", path: "sub", errHas: "is a directory"},
		{name: "too large", path: "big.txt", errHas: "too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := local(dir).ReadTextFile(t.Context(), filepath.Join(dir, tt.path))
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("ReadTextFile error = %v, want one containing %q", err, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ReadTextFile = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLocalFS_WriteTextFile(t *testing.T) {
	t.Run("new file in new directories", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "a", "b", "new.go")
		if err := local(dir).WriteTextFile(t.Context(), path, "package b\n"); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "package b\n", 0o644)
		fi, err := os.Stat(filepath.Join(dir, "a"))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != 0o755 {
			t.Errorf("parent mode = %v, want 0755", got)
		}
		if diff := cmp.Diff([]string{"new.go"}, testkit.DirNames(t, filepath.Dir(path))); diff != "" {
			t.Errorf("directory (-want +got):\n%s", diff)
		}
	})
	t.Run("existing file keeps its mode", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "run.sh")
		if err := os.WriteFile(path, []byte("old"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o751); err != nil { // no umask in the way
			t.Fatal(err)
		}
		if err := local(dir).WriteTextFile(t.Context(), path, "#!/bin/sh\n"); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "#!/bin/sh\n", 0o751)
		if diff := cmp.Diff([]string{"run.sh"}, testkit.DirNames(t, dir)); diff != "" {
			t.Errorf("directory after write, temp files left? (-want +got):\n%s", diff)
		}
	})
	t.Run("empty content", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "empty")
		if err := local(dir).WriteTextFile(t.Context(), path, ""); err != nil {
			t.Fatal(err)
		}
		checkFile(t, path, "", 0o644)
	})
	t.Run("through a symlink", func(t *testing.T) {
		dir := t.TempDir()
		target := filepath.Join(dir, "real.txt")
		if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link.txt")
		testkit.Symlink(t, "real.txt", link)
		if err := local(dir).WriteTextFile(t.Context(), link, "new"); err != nil {
			t.Fatal(err)
		}
		checkFile(t, target, "new", 0o600)
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("link was replaced: %v, %v", fi, err)
		}
	})
	t.Run("directory refused", func(t *testing.T) {
		dir := t.TempDir()
		mkTree(t, dir, map[string]string{"sub/": ""})
		err := local(dir).WriteTextFile(t.Context(), filepath.Join(dir, "sub"), "x")
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("WriteTextFile to a directory: error = %v", err)
		}
		if diff := cmp.Diff([]string{"sub"}, testkit.DirNames(t, dir)); diff != "" {
			t.Errorf("directory (-want +got):\n%s", diff)
		}
	})
	t.Run("failure leaves nothing behind", func(t *testing.T) {
		dir := t.TempDir()
		mkTree(t, dir, map[string]string{"file": "x"})
		err := local(dir).WriteTextFile(t.Context(), filepath.Join(dir, "file", "child.txt"), "x")
		if err == nil {
			t.Fatal("WriteTextFile under a regular file succeeded")
		}
		if diff := cmp.Diff([]string{"file"}, testkit.DirNames(t, dir)); diff != "" {
			t.Errorf("directory (-want +got):\n%s", diff)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		dir := t.TempDir()
		path := filepath.Join(dir, "x")
		if err := local(dir).WriteTextFile(ctx, path, "x"); err == nil {
			t.Error("WriteTextFile with a cancelled context succeeded")
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("file written despite cancellation: %v", err)
		}
	})
}

// local is LocalFS confined to dir.
func local(dir string) tools.LocalFS { return tools.LocalFS{WS: tools.NewWorkspace(dir)} }

func checkFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != content {
		t.Errorf("%s = %q, want %q", path, b, content)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != mode {
		t.Errorf("%s mode = %v, want %v", path, got, mode)
	}
}
