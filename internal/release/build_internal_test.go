package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// unstripped finds the symbol table and DWARF in a binary linked plainly,
// and nothing in one linked with LDFlags.
func TestUnstripped(t *testing.T) {
	t.Parallel() // it waits for two go builds
	if runtime.GOOS == "darwin" {
		t.Skip("Mach-O binaries are checked for DWARF only")
	}
	dir := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	build := func(out string, args ...string) string {
		t.Helper()
		cmd := exec.Command("go", append(append([]string{"build", "-o", out}, args...), ".")...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		return filepath.Join(dir, out)
	}
	if got := unstripped(build("plain"), runtime.GOOS); len(got) != 2 {
		t.Errorf("unstripped(plain build) = %q, want the symbol table and DWARF", got)
	}
	if got := unstripped(build("stripped", "-ldflags", LDFlags), runtime.GOOS); len(got) != 0 {
		t.Errorf("unstripped(build with %s) = %q, want nothing", LDFlags, got)
	}
}

// The same files make the same archive, whatever their dates and modes on
// disk and whenever it is written: the sha256 in the registry entry is of
// the sources, not of the build machine's clock.
func TestWriteArchive_Reproducible(t *testing.T) {
	dir := t.TempDir()
	files := archiveSources(t, dir)
	stamp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, ext := range []string{".tar.gz", ".zip"} {
		t.Run(ext, func(t *testing.T) {
			first := filepath.Join(dir, "first"+ext)
			if err := writeArchive(first, files, stamp); err != nil {
				t.Fatal(err)
			}
			// Another checkout of the same files: other dates, other modes.
			later := time.Now().Add(time.Hour)
			for _, f := range files {
				if err := os.Chtimes(f.path, later, later); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(f.path, 0o640); err != nil {
					t.Fatal(err)
				}
			}
			second := filepath.Join(dir, "second"+ext)
			if err := writeArchive(second, files, stamp); err != nil {
				t.Fatal(err)
			}
			a, errA := fileSHA256(first)
			b, errB := fileSHA256(second)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			if a != b {
				t.Errorf("the same files make archives with sha256 %s and %s", a, b)
			}
		})
	}
}
