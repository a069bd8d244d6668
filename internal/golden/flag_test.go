package golden_test

import (
	"bufio"
	"flag"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/golden"
)

func TestUpdate_IsTheUpdateFlag(t *testing.T) {
	if f := flag.Lookup("update"); f == nil || f.Value.String() != strconv.FormatBool(*golden.Update) {
		t.Errorf("flag -update = %v, want golden.Update", f)
	}
}

// `go test ./... -update` fails with "flag provided but not defined:
// -update" in a package whose test binary does not define the flag, and
// only golden.Update defines it; a package added later is easily missed
// (issue #22). So every package with tests must import this package from a
// test file that is built on every platform.
func TestUpdate_EveryPackageWithTestsHasTheFlag(t *testing.T) {
	root, module := moduleRoot(t)
	self := module + "/internal/golden"
	var missing []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir // not packages of ./...
		}
		if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
			return filepath.SkipDir // another module
		}
		tests, err := filepath.Glob(filepath.Join(path, "*_test.go"))
		if err != nil || len(tests) == 0 {
			return err
		}
		var pkg string
		has := false
		for _, file := range tests {
			if base := filepath.Base(file); strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
				continue // ignored by go
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly|parser.ParseComments)
			if err != nil {
				return err
			}
			if pkg == "" || strings.HasSuffix(f.Name.Name, "_test") {
				pkg = f.Name.Name
			}
			constrained := false
			for _, g := range f.Comments {
				if g.Pos() > f.Package {
					break
				}
				for _, c := range g.List {
					constrained = constrained || constraint.IsGoBuild(c.Text) || constraint.IsPlusBuild(c.Text)
				}
			}
			if constrained || hasPlatformSuffix(filepath.Base(file)) {
				continue // not in every test binary
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == self {
					has = true
				}
			}
		}
		if !has && pkg != "" {
			rel, _ := filepath.Rel(root, path)
			missing = append(missing, filepath.ToSlash(rel)+" (package "+pkg+")")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(missing)
	for _, m := range missing {
		dir, pkg, _ := strings.Cut(m, " (package ")
		pkg = strings.TrimSuffix(pkg, ")")
		t.Errorf("%s has tests but no test file built on every platform imports %s, so `go test ./... -update` fails there (flag provided but not defined: -update); add %s/update_flag_test.go:\n\n"+
			"package %s\n\n"+
			"// The module's tests share one -update flag, so that go test ./... -update\n"+
			"// works in every package, including those with no golden files.\n"+
			"import _ %q\n", dir, self, dir, pkg, self)
	}
}

// hasPlatformSuffix reports whether a test file's name limits it to one
// GOOS or GOARCH (x_linux_test.go, x_amd64_test.go), as go build reads it.
func hasPlatformSuffix(name string) bool {
	parts := strings.Split(strings.TrimSuffix(name, "_test.go"), "_")[1:] // what precedes the first '_' never counts
	n := len(parts)
	return n >= 1 && (knownOS[parts[n-1]] || knownArch[parts[n-1]])
}

var (
	knownOS   = setOf("aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos")
	knownArch = setOf("386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 mips64le mips64p32 mips64p32le ppc ppc64 ppc64le riscv riscv64 s390 s390x sparc sparc64 wasm")
)

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// moduleRoot returns the directory of the go.mod above the test's working
// directory and the module path it declares.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := os.Open(filepath.Join(dir, "go.mod"))
		if err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
					return dir, strings.Trim(strings.TrimSpace(m), `"`)
				}
			}
			t.Fatalf("%s/go.mod declares no module", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
