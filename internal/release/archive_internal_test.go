package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// archived is a file as an archive holds it.
type archived struct {
	mode    os.FileMode
	modTime time.Time
	data    string
}

// readBack reads an archive as its format (by content, not by name) says.
func readBack(t *testing.T, path string) (format string, files map[string]archived) {
	t.Helper()
	files = map[string]archived{}
	if zr, err := zip.OpenReader(path); err == nil {
		defer zr.Close()
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name] = archived{f.Mode(), f.Modified.UTC(), string(b)}
		}
		return "zip", files
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s is neither a zip nor gzipped: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "tar.gz", files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			t.Errorf("%s: type %c, want a regular file", h.Name, h.Typeflag)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = archived{os.FileMode(h.Mode), h.ModTime.UTC(), string(b)}
	}
}

// archiveSources writes a release's two files into dir, as on a build
// machine (mode 0600), and lists them as an archive holds them.
func archiveSources(t *testing.T, dir string) []archiveFile {
	t.Helper()
	files := []archiveFile{
		{name: "rebound", path: filepath.Join(dir, "bin"), mode: 0o755},
		{name: "LICENSE", path: filepath.Join(dir, "doc"), mode: 0o644},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(archiveContent[f.name]), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var archiveContent = map[string]string{"rebound": "\x7fELF binary", "LICENSE": "the licence"}

// writeArchive writes the format its name says, holding each file under
// its name with its mode, the stamp as its date, and its content.
func TestWriteArchive_FormatAndEntries(t *testing.T) {
	dir := t.TempDir()
	files := archiveSources(t, dir)
	stamp := time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC) // even seconds: zip dates have 2 s steps
	for _, ext := range []string{"tar.gz", "zip"} {
		path := filepath.Join(dir, "a."+ext)
		if err := writeArchive(path, files, stamp); err != nil {
			t.Fatal(err)
		}
		format, got := readBack(t, path)
		if format != ext {
			t.Errorf("a.%s is a %s", ext, format)
		}
		want := map[string]archived{"rebound": {0o755, stamp, archiveContent["rebound"]}, "LICENSE": {0o644, stamp, archiveContent["LICENSE"]}}
		if len(got) != len(want) {
			t.Errorf("a.%s holds %v, want %v", ext, got, want)
		}
		for name, w := range want {
			if g := got[name]; g.mode != w.mode || !g.modTime.Equal(w.modTime) || g.data != w.data {
				t.Errorf("a.%s: %s is %+v, want %+v", ext, name, g, w)
			}
		}
	}
	if err := writeArchive(filepath.Join(dir, "b.zip"), []archiveFile{{name: "x", path: filepath.Join(dir, "missing")}}, stamp); err == nil {
		t.Error("writeArchive of a missing file: no error")
	}
}

// An auth method's type is its own, else "terminal" where its _meta has
// terminal-auth, else "agent", as the registry's client.py infers it.
func TestAuthType(t *testing.T) {
	for _, c := range []struct {
		typ  string
		meta map[string]any
		want string
	}{
		{"env_var", map[string]any{"terminal-auth": true}, "env_var"},
		{"", map[string]any{"terminal-auth": map[string]any{}}, "terminal"},
		{"", map[string]any{"other": 1}, "agent"},
		{"", nil, "agent"},
	} {
		if got := authType(c.typ, c.meta); got != c.want {
			t.Errorf("authType(%q, %v) = %q, want %q", c.typ, c.meta, got, c.want)
		}
	}
}
