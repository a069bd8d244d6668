package tools

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ignoreCase is a tree with .gitignore-style files and what git says of
// each of its paths. files maps a directory ("" for the top) to the content
// of its .gitignore; the key "info/exclude" is .git/info/exclude. In paths, a
// trailing "/" marks a directory; true means ignored (the path, or a
// directory it is in, is excluded).
type ignoreCase struct {
	name  string
	files map[string]string
	paths map[string]bool
}

// ignoreCases follow gitignore(5). TestIgnore_AgreesWithGit checks every one
// against `git check-ignore` where git is installed.
var ignoreCases = []ignoreCase{
	{name: "a name matches at any depth",
		files: map[string]string{"": "*.log\n"},
		paths: map[string]bool{"a.log": true, "d/b.log": true, "d/e/c.log": true, "a.txt": false, "log": false, "d/": false}},
	{name: "negation re-includes; the last match decides",
		files: map[string]string{"": "*.log\n!keep.log\n!late.log\nlate.log\n"},
		paths: map[string]bool{"x.log": true, "keep.log": false, "d/keep.log": false, "late.log": true}},
	{name: "a trailing slash matches directories only",
		files: map[string]string{"": "build/\n"},
		paths: map[string]bool{"build/": true, "build/x.go": true, "sub/build": false, "sub/deep/build/": true, "sub/deep/build/y": true}},
	{name: "a leading slash anchors to the file's directory",
		files: map[string]string{"": "/top.txt\n"},
		paths: map[string]bool{"top.txt": true, "d/top.txt": false}},
	{name: "a slash in the middle anchors too",
		files: map[string]string{"": "doc/frotz\nweb/out/\n"},
		paths: map[string]bool{"doc/frotz": true, "a/doc/frotz": false, "web/out/": true, "a/web/out/": false, "web/out/x": true}},
	{name: "a star does not match a slash",
		files: map[string]string{"": "doc/*.txt\n"},
		paths: map[string]bool{"doc/a.txt": true, "doc/x/b.txt": false, "doc/.txt": true}},
	{name: "leading double star",
		files: map[string]string{"": "**/foo\n**/bar/baz\n**/logs/\n"},
		paths: map[string]bool{
			"foo": true, "a/foo": true, "a/b/foo": true, "afoo": false,
			"bar/baz": true, "a/bar/baz": true, "a/bar/x/baz": false,
			"logs/": true, "a/logs/": true, "b/logs": false}},
	{name: "trailing double star",
		files: map[string]string{"": "abc/**\n"},
		paths: map[string]bool{"abc/": false, "abc/x": true, "abc/y/z": true, "d/abc/x": false}},
	{name: "a single star between slashes is one directory",
		files: map[string]string{"": "a/*/b\n"},
		paths: map[string]bool{"a/x/b": true, "a/b": false, "a/x/y/b": false}},
	{name: "a double star before a trailing slash",
		files: map[string]string{"": "gen/**/\n"},
		paths: map[string]bool{"gen/": false, "gen/x": false, "gen/d/": true, "gen/d/y": true}},
	{name: "double star between slashes",
		files: map[string]string{"": "a/**/b\nc/***/d\n"},
		paths: map[string]bool{"a/b": true, "a/x/b": true, "a/x/y/b": true, "a/x/c": false, "b": false, "a/xb": false,
			"c/d": true, "c/x/y/d": true}},
	{name: "other double stars are single stars",
		files: map[string]string{"": "a**b\nd/e**f\n"},
		paths: map[string]bool{"ab": true, "axxb": true, "s/axb": true, "d/ef": true, "d/exxf": true, "d/ex/yf": false}},
	{name: "a double star right after a literal start crosses slashes, as in git",
		files: map[string]string{"": "/ab**\n!ab\n", "cd": "b**/**\n"},
		paths: map[string]bool{"ab/": false, "ab/x": true, "abc": true, "cd/bab": true, "cd/b": true, "cd/c": false, "cd/bb/x": true}},
	{name: "a question mark is one byte, never a slash",
		files: map[string]string{"": "?.c\nd/a?b\n?.md\n"},
		paths: map[string]bool{"a.c": true, "ab.c": false, "x/y.c": true, "d/axb": true, "d/a/b": false, "é.md": false, "e.md": true}},
	{name: "bracket classes",
		files: map[string]string{"": "[abc].txt\n[!abc].md\n[^x].go\nfile[0-9].dat\n[]]x\n[[:digit:]]*.csv\n[a-]y\n"},
		paths: map[string]bool{
			"a.txt": true, "d.txt": false,
			"a.md": false, "d.md": true,
			"x.go": false, "y.go": true,
			"file5.dat": true, "filex.dat": false,
			"]x":     true,
			"1a.csv": true, "a1.csv": false,
			"ay": true, "-y": true, "by": false}},
	{name: "malformed classes match nothing",
		files: map[string]string{"": "[abc\nz[[:bogus:]]\n"},
		paths: map[string]bool{"[abc": false, "a": false, "z[[:bogus:]]": false}},
	{name: "odd classes and a trailing backslash",
		files: map[string]string{"": "c[[:x]\n[!]]q\nm[a-c-e]\n[z-a]r\nback\\\n"},
		paths: map[string]bool{"c[": true, "c:": true, "cx": true, "cy": false, "aq": true, "]q": false,
			"ma": true, "m-": true, "me": true, "md": false, "zr": true, "ar": false, "back": false, "back\\": false}},
	{name: "escapes, comments and blank lines",
		files: map[string]string{"": "# a comment\n\n\\#hash\n\\!bang\n#skipped\nst\\*r\n"},
		paths: map[string]bool{"#hash": true, "!bang": true, "#skipped": false, "st*r": true, "stxr": false}},
	{name: "trailing spaces are dropped unless escaped",
		files: map[string]string{"": "spaced   \nesc\\ \n"},
		paths: map[string]bool{"spaced": true, "esc ": true, "esc": false}},
	{name: "CRLF lines and a byte order mark",
		files: map[string]string{"": "\uFEFFbom.txt\r\ncrlf.txt\r\n"},
		paths: map[string]bool{"bom.txt": true, "crlf.txt": true}},
	{name: "a nested file applies below its directory and wins",
		files: map[string]string{"": "*.tmp\n", "sub": "!keep.tmp\n/anchored.txt\nname.txt\n"},
		paths: map[string]bool{
			"keep.tmp": true, "sub/keep.tmp": false, "sub/x/keep.tmp": false,
			"anchored.txt": false, "sub/anchored.txt": true, "sub/x/anchored.txt": false,
			"name.txt": false, "sub/x/name.txt": true}},
	{name: "nothing in an excluded directory can be re-included",
		files: map[string]string{"": "build/\n!build/keep.go\nout/*\n!out/keep.go\n"},
		paths: map[string]bool{"build/keep.go": true, "out/keep.go": false, "out/x.go": true}},
	{name: "info/exclude yields to .gitignore",
		files: map[string]string{"info/exclude": "*.bak\nexcl/\n", "": "!keep.bak\n"},
		paths: map[string]bool{"x.bak": true, "keep.bak": false, "excl/": true, "excl/a": true}},
	{name: "everything at the top only",
		files: map[string]string{"": "/*\n!/src/\n"},
		paths: map[string]bool{"x": true, "d/": true, "d/y": true, "src/": false, "src/a.go": false}},
	{name: "negated directory pattern",
		files: map[string]string{"": "*\n!*/\n!*.go\n"},
		paths: map[string]bool{"a.txt": true, "a.go": false, "d/": false, "d/b.go": false, "d/b.txt": true}},
}

// ignoreRules reads a case's files in git's order of precedence, lowest
// first: .git/info/exclude, then the .gitignore files from the top down.
func (c ignoreCase) ignoreRules() []ignoreRule {
	rules := parseIgnoreFile(strings.NewReader(c.files["info/exclude"]), "")
	dirs := make([]string, 0, len(c.files))
	for d := range c.files {
		if d != "info/exclude" {
			dirs = append(dirs, d)
		}
	}
	depth := func(d string) int {
		if d == "" {
			return 0
		}
		return 1 + strings.Count(d, "/")
	}
	slices.SortFunc(dirs, func(a, b string) int { return depth(a) - depth(b) })
	for _, d := range dirs {
		base := ""
		if d != "" {
			base = d + "/"
		}
		rules = append(rules, parseIgnoreFile(strings.NewReader(c.files[d]), base)...)
	}
	return rules
}

func TestIgnore_GitignoreSemantics(t *testing.T) {
	for _, c := range ignoreCases {
		t.Run(c.name, func(t *testing.T) {
			rules := c.ignoreRules()
			for p, want := range c.paths {
				isDir := strings.HasSuffix(p, "/")
				if got := ignoredPath(rules, strings.TrimSuffix(p, "/"), isDir); got != want {
					t.Errorf("%q: ignored = %v, want %v", p, got, want)
				}
			}
		})
	}
}

// TestIgnore_AgreesWithGit builds each case as a repository and asks git
// which paths it ignores.
func TestIgnore_AgreesWithGit(t *testing.T) {
	t.Parallel() // mostly waiting for git
	if testing.Short() {
		t.Skip("runs git")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	for _, c := range ignoreCases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			cmd := exec.Command(git, "init", "-q", root)
			cmd.Env = gitEnv(t)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("git init: %v\n%s", err, out)
			}
			for d, content := range c.files {
				file := filepath.Join(root, d, ".gitignore")
				if d == "info/exclude" {
					file = filepath.Join(root, ".git", "info", "exclude")
				}
				writeTestFile(t, file, content)
			}
			var paths []string
			for p := range c.paths {
				if strings.HasSuffix(p, "/") {
					if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
						t.Fatal(err)
					}
				} else {
					writeTestFile(t, filepath.Join(root, p), "")
				}
				paths = append(paths, strings.TrimSuffix(p, "/"))
			}
			cmd = exec.Command(git, "-C", root, "check-ignore", "--no-index", "--stdin", "-z")
			cmd.Env = gitEnv(t)
			cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if exit, ok := err.(*exec.ExitError); err != nil && !(ok && exit.ExitCode() == 1) { // 1: none ignored
				t.Fatalf("git check-ignore: %v\n%s", err, stderr.String())
			}
			ignoredByGit := map[string]bool{}
			for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
				ignoredByGit[p] = true
			}
			for p, want := range c.paths {
				if got := ignoredByGit[strings.TrimSuffix(p, "/")]; got != want {
					t.Errorf("%q: git says ignored = %v, the case says %v", p, got, want)
				}
			}
		})
	}
}

// gitEnv keeps the user's and the system's git configuration (a global
// excludes file, say) out of a test.
func gitEnv(t *testing.T) []string {
	home := t.TempDir()
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "none"))
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIgnore_RandomPatternsAgreeWithGit compares the matcher with `git
// check-ignore` on random pattern files (a top one and a nested one) made of
// the pieces where implementations tend to differ.
func TestIgnore_RandomPatternsAgreeWithGit(t *testing.T) {
	t.Parallel() // mostly waiting for git
	if testing.Short() {
		t.Skip("runs git")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root := t.TempDir()
	cmd := exec.Command(git, "init", "-q", root)
	cmd.Env = gitEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("git init: %v\n%s", err, out)
	}
	names := []string{"a", "b", "ab", "ba", "x", "aa", "-", "!a", "a b", "bab"}
	isDir := map[string]bool{}
	for _, d := range names[:6] {
		isDir[d], isDir[d+"/sub"], isDir[d+"/sub/deep"] = true, true, true
		writeTestFile(t, filepath.Join(root, d+".f"), "")
		isDir[d+".f"] = false
		for _, n := range names {
			writeTestFile(t, filepath.Join(root, d, n), "")
			isDir[d+"/"+n] = false
		}
		for _, n := range []string{"a", "x", "ab"} {
			writeTestFile(t, filepath.Join(root, d, "sub", n), "")
			writeTestFile(t, filepath.Join(root, d, "sub", "deep", n), "")
			isDir[d+"/sub/"+n], isDir[d+"/sub/deep/"+n] = false, false
		}
	}
	paths := slices.Sorted(maps.Keys(isDir))
	pieces := []string{"a", "b", "ab", "x", "-", " ", "!", "*", "**", "?", "/", "/", "/**", "**/", "b/", "a*",
		"[ab]", "[!a]", "[a-b]", "[]a]", `[\]a]`, "[a-]", "[[:alpha:]]", `\a`, `\*`, `\ `}
	rnd := rand.New(rand.NewPCG(1, 2))
	patterns := func() string {
		var lines []string
		for range 1 + rnd.IntN(3) {
			var b strings.Builder
			if rnd.IntN(3) == 0 {
				b.WriteString("!")
			}
			for range 1 + rnd.IntN(4) {
				b.WriteString(pieces[rnd.IntN(len(pieces))])
			}
			lines = append(lines, b.String())
		}
		return strings.Join(lines, "\n") + "\n"
	}
	for range 300 {
		top, nested := patterns(), patterns()
		writeTestFile(t, filepath.Join(root, ".gitignore"), top)
		writeTestFile(t, filepath.Join(root, "ab", ".gitignore"), nested)
		cmd := exec.Command(git, "-C", root, "check-ignore", "--no-index", "--stdin", "-z")
		cmd.Env = gitEnv(t)
		cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
		out, err := cmd.Output()
		if exit, ok := err.(*exec.ExitError); err != nil && !(ok && exit.ExitCode() == 1) {
			t.Fatalf("git check-ignore: %v", err)
		}
		byGit := map[string]bool{}
		for _, p := range strings.Split(string(out), "\x00") {
			byGit[p] = true
		}
		rules := append(parseIgnoreFile(strings.NewReader(top), ""), parseIgnoreFile(strings.NewReader(nested), "ab/")...)
		for _, p := range paths {
			if got := ignoredPath(rules, p, isDir[p]); got != byGit[p] {
				t.Fatalf(".gitignore %q, ab/.gitignore %q: %q ignored = %v, git says %v", top, nested, p, got, byGit[p])
			}
		}
	}
}

func TestIgnore_ParseLine(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
		want ignoreRule
	}{
		{line: "", ok: false},
		{line: "   ", ok: false},
		{line: "# comment", ok: false},
		{line: "!", ok: false},
		{line: "/", ok: false},
		{line: "*.go", ok: true, want: ignoreRule{name: "*.go"}},
		{line: "vendor", ok: true, want: ignoreRule{name: "vendor", literal: true}},
		{line: "!build/", ok: true, want: ignoreRule{name: "build", literal: true, negate: true, dirOnly: true}},
		{line: "/a/**/b  ", ok: true, want: ignoreRule{segs: []string{"a", "**", "b"}}},
		{line: `a\/b`, ok: true, want: ignoreRule{segs: []string{"a", "b"}}},
		{line: "a/[/]b", ok: true, want: ignoreRule{segs: []string{"a", "[/]b"}}},
		{line: "x[", ok: true, want: ignoreRule{name: "x[", never: true}},
	}
	for _, tt := range tests {
		got, ok := parseIgnoreLine(tt.line, "")
		if ok != tt.ok {
			t.Errorf("parseIgnoreLine(%q) ok = %v, want %v", tt.line, ok, tt.ok)
			continue
		}
		if ok && (got.name != tt.want.name || !slices.Equal(got.segs, tt.want.segs) || got.negate != tt.want.negate ||
			got.dirOnly != tt.want.dirOnly || got.literal != tt.want.literal || got.never != tt.want.never) {
			t.Errorf("parseIgnoreLine(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestIgnore_MatchNameDoesNotBlowUp(t *testing.T) {
	// Stars backtrack only to the last one: a long name and many stars stay
	// linear-ish rather than exponential.
	name := strings.Repeat("a", 4096)
	if matchName(strings.Repeat("*a", 64)+"b", name) {
		t.Fatal("matched a name without b")
	}
	if !matchName(strings.Repeat("*a", 64)+"*", name) {
		t.Fatal("did not match")
	}
}
