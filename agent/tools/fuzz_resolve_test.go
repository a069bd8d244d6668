package tools_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/agent/tools"
)

// The tree and the path FuzzResolve builds come from these menus, indexed
// by the fuzzer's bytes. The kernel is the oracle, by writing for real, so
// everything it could reach must stay inside the test's temporary
// directory: the sandbox sits sandboxDepth directories down, link targets
// climb at most three levels, paths have at most maxFuzzComponents parts,
// and the directories above the sandbox hold none of the menu's names.
const (
	sandboxDepth      = 12
	maxFuzzLinks      = 8
	maxFuzzComponents = 8
)

var (
	fuzzLinkAt = []string{"ws/a", "ws/b", "ws/src/c", "ws/notes.txt", "ws/cfg", "out/o", "lib/l", "ws/src/main.go"}
	// "@" stands for the sandbox's absolute path.
	fuzzTargets = []string{
		".", "..", "../..", "../../..", "src", "src/main.go", "missing", "missing/x", "missing/../x",
		"a", "b", "a/..", "b/../..", "../out", "../out/.config", "cfg/../.bash_login", "a/../secret",
		"../lib", "../ws/src", "c/..", "notes.txt/..", "main.go/../x", "../../out/secret",
		"@/out", "@/out/.config", "@/out/new", "@/ws", "@/ws/src", "@/ws/new", "@/lib", "@", "@/ws/a",
	}
	fuzzParts = []string{"a", "b", "c", "o", "l", "cfg", "src", "main.go", "notes.txt", "new", "x", ".bash_login", "..", ".", "out", "ws"}
	fuzzStart = []string{"", "@/ws", "@/lib", "@/out", "@"}
)

// FuzzResolve: on a small tree of links (to the outside, with ".." in their
// targets, dangling, looping), Resolve and Target never panic, agree, and
// never accept a path that the kernel, writing it, puts outside the roots.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{3, 15, 4, 24}, []byte{0, 8})          // notes.txt -> cfg/../.bash_login, cfg -> @/out/.config
	f.Add([]byte{0, 1, 1, 0}, []byte{0, 0, 1, 9})      // a -> .., b -> .
	f.Add([]byte{0, 9, 1, 10}, []byte{0, 0})           // a <-> b loop
	f.Add([]byte{2, 19, 0, 4}, []byte{1, 6, 2, 12, 9}) // src/c -> c/.., a -> src
	f.Add([]byte{4, 13}, []byte{0, 5, 10})             // cfg -> ../out, then cfg/x
	// The directories above the sandboxes are made once: making and
	// removing them for every input was most of the time.
	top := f.TempDir()
	chain := filepath.Join(append([]string{top}, slices.Repeat([]string{"d"}, sandboxDepth)...)...)
	if err := os.MkdirAll(chain, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tree, path []byte) {
		sandbox, err := os.MkdirTemp(chain, "s")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(sandbox)
		mkTree(t, sandbox, map[string]string{
			"ws/src/main.go": "package main",
			"out/.config/":   "",
			"out/secret":     "secret",
			"lib/x.go":       "package lib",
		})
		at := func(s string) string { return strings.Replace(s, "@", sandbox, 1) }
		made := map[string]bool{}
		for i := 0; i+1 < len(tree) && len(made) < maxFuzzLinks; i += 2 {
			loc := fuzzLinkAt[int(tree[i])%len(fuzzLinkAt)]
			if made[loc] {
				continue
			}
			made[loc] = true
			link := filepath.Join(sandbox, loc)
			os.Remove(link) // src/main.go may become a link
			if err := os.Symlink(at(fuzzTargets[int(tree[i+1])%len(fuzzTargets)]), link); err != nil {
				continue // under a link made before
			}
		}
		var p string
		if len(path) > 0 {
			p = at(fuzzStart[int(path[0])%len(fuzzStart)])
			for _, b := range path[1:min(len(path), 1+maxFuzzComponents)] {
				p = filepath.Join(p, fuzzParts[int(b)%len(fuzzParts)])
				if p == "" {
					p = "."
				}
			}
		}
		roots := []string{filepath.Join(sandbox, "ws"), filepath.Join(sandbox, "lib")}
		ws := tools.NewWorkspace(roots[0], roots[1])

		abs, err := ws.Resolve(p)
		target, terr := ws.Target(p)
		ws.Protected(p)
		if (err == nil) != (terr == nil) {
			t.Fatalf("Resolve(%q) = %q, %v but Target = %q, %v", p, abs, err, target, terr)
		}
		if err != nil {
			return
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return r == target || strings.HasPrefix(target, r+"/") }) {
			t.Fatalf("Target(%q) = %q, outside the roots", p, target)
		}

		// Write abs as an editor would, following links, and see where the
		// kernel put it.
		before := listTree(t, top)
		if os.MkdirAll(filepath.Dir(abs), 0o755) != nil {
			return
		}
		file, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE, 0o644)
		for _, e := range listTree(t, top) {
			if !slices.Contains(before, e) && !slices.ContainsFunc(roots, func(r string) bool { return strings.HasPrefix(e, r+"/") }) {
				t.Errorf("writing %q (accepted as %q, target %q) created %s, outside the roots", p, abs, target, e)
			}
		}
		if err != nil {
			return // a directory, say: the kernel refused, nothing landed
		}
		defer file.Close()
		fi, err := file.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if tfi, err := os.Stat(target); err != nil || !os.SameFile(fi, tfi) {
			t.Errorf("writing %q landed elsewhere than its Target %q (%v)", p, target, err)
		}
	})
}

// listTree returns every path under dir, links not followed.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
