package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// unstripped finds the symbol table and DWARF in a binary linked plainly,
// and nothing in one linked with LDFlags.
func TestUnstripped(t *testing.T) {
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
