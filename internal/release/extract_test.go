package release_test

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/release"
)

// entry is one member of a test archive.
type entry struct {
	name string
	kind byte // tar.TypeReg, tar.TypeDir, tar.TypeSymlink or tar.TypeLink
	mode int64
	body string
}

func writeArchive(t *testing.T, path string, entries []entry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(path, ".zip") {
		zw := zip.NewWriter(f)
		for _, e := range entries {
			h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
			switch e.kind {
			case tar.TypeDir:
				h.SetMode(fs.ModeDir | fs.FileMode(e.mode))
			case tar.TypeSymlink, tar.TypeLink:
				h.SetMode(fs.ModeSymlink | 0o777)
			default:
				h.SetMode(fs.FileMode(e.mode))
			}
			w, err := zw.CreateHeader(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(e.body))
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Typeflag: e.kind}
		switch e.kind {
		case tar.TypeReg:
			h.Size = int64(len(e.body))
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname = e.body
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.kind == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// Extract writes files and directories of both formats where their names
// say, with their executable bit and never more than 0755, and refuses,
// writing nothing outside, what leaves the directory (.., absolute,
// backslashes) and links of every kind.
func TestExtract_Entries(t *testing.T) {
	for _, ext := range []string{".tar.gz", ".zip"} {
		for _, tc := range []struct {
			name    string
			entries []entry
			want    string            // part of the error; "" for none
			files   map[string]string // path → body, or "/" for a directory
		}{
			{"files and directories", []entry{{"bin/", tar.TypeDir, 0o755, ""}, {"bin/rebound", tar.TypeReg, 0o755, "exe"}, {"README", tar.TypeReg, 0o644, "r"}, {"a/b/c", tar.TypeReg, 0o600, "deep"}, {"w", tar.TypeReg, 0o777, "w"}, {"r", tar.TypeReg, 0o444, "r"}},
				"", map[string]string{"bin": "/", "bin/rebound": "exe", "README": "r", "a/b/c": "deep", "w": "w", "r": "r"}},
			{"a path that stays inside", []entry{{"a/../b", tar.TypeReg, 0o644, "b"}, {"./c", tar.TypeReg, 0o644, "c"}}, "", map[string]string{"b": "b", "c": "c"}},
			{"parent", []entry{{"../outside", tar.TypeReg, 0o644, "x"}}, "leaves the extraction directory", nil},
			{"parent after a name", []entry{{"ok", tar.TypeReg, 0o644, "ok"}, {"a/../../outside", tar.TypeReg, 0o644, "x"}}, "leaves the extraction directory", map[string]string{"ok": "ok"}},
			{"parent itself", []entry{{"..", tar.TypeDir, 0o755, ""}}, "leaves the extraction directory", nil},
			{"absolute", []entry{{"/outside", tar.TypeReg, 0o644, "x"}}, "leaves the extraction directory", nil},
			{"backslash", []entry{{`..\outside`, tar.TypeReg, 0o644, "x"}}, "leaves the extraction directory", nil},
			{"symlink", []entry{{"link", tar.TypeSymlink, 0o777, "/etc/passwd"}}, "link", nil},
			{"hard link", []entry{{"link", tar.TypeLink, 0o644, "/etc/passwd"}}, "link", nil},
		} {
			t.Run(ext+"/"+tc.name, func(t *testing.T) {
				if ext == ".zip" && tc.name == "hard link" {
					t.Skip("a zip has no hard links")
				}
				top := t.TempDir()
				archive := filepath.Join(top, "a"+ext)
				writeArchive(t, archive, tc.entries)
				dir := filepath.Join(top, "x", "y")
				err := release.Extract(archive, dir)
				switch {
				case tc.want == "" && err != nil:
					t.Fatalf("Extract: %v", err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) && !strings.Contains(err.Error(), "not a file or directory")):
					t.Fatalf("Extract = %v, want an error saying %q", err, tc.want)
				}
				for _, outside := range []string{filepath.Join(top, "x", "outside"), filepath.Join(top, "outside"), filepath.Join(top, "x", "link"), filepath.Join(dir, "link")} {
					if _, err := os.Lstat(outside); err == nil {
						t.Errorf("%s was written", outside)
					}
				}
				for name, body := range tc.files {
					p := filepath.Join(dir, filepath.FromSlash(name))
					st, err := os.Stat(p)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						continue
					}
					if body == "/" {
						if !st.IsDir() {
							t.Errorf("%s is not a directory", name)
						}
						continue
					}
					if got, _ := os.ReadFile(p); string(got) != body {
						t.Errorf("%s = %q, want %q", name, got, body)
					}
					if perm := st.Mode().Perm(); runtime.GOOS != "windows" && (perm&^0o755 != 0 || perm&0o600 != 0o600) {
						t.Errorf("%s mode %v, want the owner's read and write and no more than 0755", name, perm)
					}
				}
				if exe, ok := tc.files["bin/rebound"]; ok && exe != "" && runtime.GOOS != "windows" {
					if st, err := os.Stat(filepath.Join(dir, "bin", "rebound")); err == nil && st.Mode().Perm()&0o100 == 0 {
						t.Errorf("bin/rebound lost its executable bit: %v", st.Mode().Perm())
					}
				}
			})
		}
	}
}
