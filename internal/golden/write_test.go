package golden_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rebound-agent/rebound/internal/golden"
)

// Under `go test ./... -update` a package's tests read golden files
// another package rewrites (CI once failed: inspect read a snapshot
// cmd/rebound had just truncated). A reader must see a whole file, old or
// new, however the writes and reads interleave.
func TestWrite_ReadersSeeWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "snap.jsonl")
	a, b := bytes.Repeat([]byte("a"), 256<<10), bytes.Repeat([]byte("b"), 300<<10)
	if err := golden.Write(path, a); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range 200 {
			next := a
			if i%2 == 0 {
				next = b
			}
			if err := golden.Write(path, next); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	reads := 0
	for {
		select {
		case <-done:
			wg.Wait()
			if reads == 0 {
				t.Fatal("no read overlapped the writes")
			}
			return
		default:
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		reads++
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d: a reader saw %d bytes, neither file whole", reads, len(got))
		}
	}
}

// A fresh checkout's -update changes nothing, so it writes nothing: the
// file is the same file afterwards, with its mode, and no temporary file is
// left beside it.
func TestWrite_UnchangedIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.json")
	if err := golden.Write(path, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (a checked-in file's)", before.Mode().Perm())
	}
	if err := golden.Write(path, []byte("x\n")); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("an unchanged golden file was replaced")
	}
	if err := golden.Write(path, []byte("y\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "y\n" {
		t.Errorf("after a change: %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the directory, want 1 (a temporary file left?)", len(entries))
	}
	if err := golden.Write(filepath.Join(dir, "new", "sub", "h.txt"), []byte("z")); err != nil {
		t.Errorf("a golden file in a new directory: %v", err)
	}
}

// Two packages rewrite sections of one document at once (llm and recovery,
// docs/providers.md): each one's last rewrite must survive the other's.
func TestCompareSection_ConcurrentWritersKeepBoth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	doc := "intro\n<!-- a:begin -->\nold a\n<!-- a:end -->\nmiddle\n<!-- b:begin -->\nold b\n<!-- b:end -->\nend\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	const rounds = 100
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				body := fmt.Sprintf("%s %d\n%s\n", name, i, strings.Repeat(name, 4096))
				golden.CompareSection(t, path, "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->", body, true, "rerun")
			}
		}()
	}
	wg.Wait()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if want := fmt.Sprintf("%s %d\n", name, rounds-1); !strings.Contains(string(got), want) {
			t.Errorf("section %s lost its last rewrite %q", name, want)
		}
	}
	if !strings.HasPrefix(string(got), "intro\n") || !strings.HasSuffix(string(got), "end\n") {
		t.Errorf("text outside the sections changed:\n%.200s", got)
	}
}

// Every golden file a test rewrites goes through golden.Write (or Compare,
// CompareSection): a test that writes with os.WriteFile under -update
// brings back the race above. This finds such writes in every test file of
// the module: a call that creates or writes a file inside an `if` whose
// condition reads the update flag.
func TestUpdateWrites_GoThroughWrite(t *testing.T) {
	root, _ := moduleRoot(t)
	writers := map[string]bool{"WriteFile": true, "Create": true, "OpenFile": true}
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			s, ok := n.(*ast.IfStmt)
			if !ok || !readsUpdate(s.Cond) {
				return true
			}
			ast.Inspect(s.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && writers[sel.Sel.Name] {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "os" {
						rel, _ := filepath.Rel(root, path)
						found = append(found, fmt.Sprintf("%s:%d: os.%s", rel, fset.Position(call.Pos()).Line, sel.Sel.Name))
					}
				}
				return true
			})
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("golden files written under -update without golden.Write (another package may read them half-written):\n%s", strings.Join(found, "\n"))
	}
}

// readsUpdate reports whether an if's condition reads the -update flag
// (golden.Update, or a package's `update` alias of it).
func readsUpdate(cond ast.Expr) bool {
	reads := false
	ast.Inspect(cond, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			reads = reads || n.Name == "update"
		case *ast.SelectorExpr:
			reads = reads || n.Sel.Name == "Update"
		}
		return !reads
	})
	return reads
}
