package tools_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// repoTree is a small repository with nested .gitignore files, a negation,
// directory patterns and things that must never be listed.
func repoTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mkTree(t, root, map[string]string{
		".git/HEAD":            "ref: refs/heads/main\n",
		".git/config":          "needle\n",
		".git/info/exclude":    "excluded-by-info.txt\n",
		".gitignore":           "# build output\n*.log\n!keep.log\nbuild/\n/only-top.txt\n",
		"a.go":                 "package a // needle\n",
		"a/b.go":               "package a\n\nfunc Needle() {}\n",
		"a/c.txt":              "no match here\n",
		"debug.log":            "needle\n",
		"keep.log":             "needle in the kept log\n",
		"only-top.txt":         "needle\n",
		"excluded-by-info.txt": "needle\n",
		"build/out.go":         "needle\n",
		"sub/only-top.txt":     "needle, not anchored here\n",
		"sub/.gitignore":       "secret.go\n!build/\n",
		"sub/secret.go":        "needle\n",
		"sub/x.go":             "package sub\n",
		"sub/build":            "a file named build is not a directory\n",
		"sub/deep/y.go":        "needle\n",
		"sub/deep/z.log":       "needle\n",
	})
	return root
}

func rels(t *testing.T, root string, paths []string) []string {
	t.Helper()
	var out []string
	for _, p := range paths {
		r, err := filepath.Rel(root, p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(r))
	}
	return out
}

func TestFind(t *testing.T) {
	root := repoTree(t)
	tests := []struct {
		name, dir, glob string
		limit           int
		want            []string
		wantTruncated   bool
	}{
		{name: "base name at any depth", glob: "*.go", want: []string{"a.go", "a/b.go", "sub/deep/y.go", "sub/x.go"}},
		{name: "everything", glob: "**", want: []string{
			".gitignore", "a.go", "a/b.go", "a/c.txt", "keep.log",
			"sub/.gitignore", "sub/build", "sub/deep/y.go", "sub/only-top.txt", "sub/x.go",
		}},
		{name: "path glob", glob: "sub/**/*.go", want: []string{"sub/deep/y.go", "sub/x.go"}},
		{name: "path glob is anchored", glob: "a/*.go", want: []string{"a/b.go"}},
		{name: "leading ./", glob: "./a/*", want: []string{"a/b.go", "a/c.txt"}},
		{name: "negation keeps a file", glob: "*.log", want: []string{"keep.log"}},
		{name: "braces", glob: "*.{txt,log}", want: []string{"a/c.txt", "keep.log", "sub/only-top.txt"}},
		{name: "cap", glob: "**", limit: 3, want: []string{".gitignore", "a.go", "a/b.go"}, wantTruncated: true},
		{name: "exactly the limit is not truncated", glob: "*.go", limit: 4, want: []string{"a.go", "a/b.go", "sub/deep/y.go", "sub/x.go"}},
		{name: "subdirectory root keeps the repository's ignores", dir: "sub", glob: "*", want: []string{
			".gitignore", "build", "deep/y.go", "only-top.txt", "x.go",
		}},
		{name: "no match", glob: "*.rs", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(root, tt.dir)
			got, truncated, err := tools.Find(t.Context(), dir, tt.glob, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rels(t, dir, got)); diff != "" {
				t.Errorf("Find(%q) (-want +got):\n%s", tt.glob, diff)
			}
			if truncated != tt.wantTruncated {
				t.Errorf("truncated = %v, want %v", truncated, tt.wantTruncated)
			}
		})
	}
}

func TestFind_ExplicitIgnoredRoot(t *testing.T) {
	// Naming an ignored directory is asking for it, as with ripgrep.
	root := repoTree(t)
	got, _, err := tools.Find(t.Context(), filepath.Join(root, "build"), "*", 0)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"out.go"}, rels(t, filepath.Join(root, "build"), got)); diff != "" {
		t.Errorf("Find in an ignored directory (-want +got):\n%s", diff)
	}
}

func TestFind_DefaultLimit(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 250 {
		files[fmt.Sprintf("f%03d.txt", i)] = ""
	}
	mkTree(t, root, files)
	got, truncated, err := tools.Find(t.Context(), root, "*.txt", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != tools.DefaultFindLimit || !truncated {
		t.Errorf("Find returned %d paths, truncated=%v; want %d, true", len(got), truncated, tools.DefaultFindLimit)
	}
	if last := filepath.Base(got[len(got)-1]); last != "f199.txt" {
		t.Errorf("last path = %s, want the sorted 200th, f199.txt", last)
	}
}

func TestFind_Symlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mkTree(t, base, map[string]string{
		"root/real/a.go":  "",
		"root/inside.go":  "",
		"outside/evil.go": "",
		"outside/d/x.go":  "",
	})
	testkit.Symlink(t, "inside.go", filepath.Join(root, "link-inside.go"))
	testkit.Symlink(t, filepath.Join(base, "outside/evil.go"), filepath.Join(root, "link-out.go"))
	testkit.Symlink(t, filepath.Join(base, "outside/d"), filepath.Join(root, "dir-out"))
	testkit.Symlink(t, "real", filepath.Join(root, "dir-in"))
	testkit.Symlink(t, "..", filepath.Join(root, "real", "loop"))

	got, _, err := tools.Find(t.Context(), root, "*.go", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"inside.go", "link-inside.go", "real/a.go"}
	if diff := cmp.Diff(want, rels(t, root, got)); diff != "" {
		t.Errorf("Find with symlinks (-want +got):\n%s", diff)
	}
}

func TestFind_Errors(t *testing.T) {
	root := repoTree(t)
	tests := []struct{ name, dir, glob, errHas string }{
		{"bad glob", "", "[a-", "not valid"},
		{"empty glob", "", "", "empty"},
		{"missing dir", "nope", "*", "does not exist"},
		{"file, not dir", "a.go", "*", "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := tools.Find(t.Context(), filepath.Join(root, tt.dir), tt.glob, 0)
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Errorf("Find error = %v, want one containing %q", err, tt.errHas)
			}
		})
	}
}

func TestFind_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := tools.Find(ctx, repoTree(t), "*", 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Find with a cancelled context: error = %v, want context.Canceled", err)
	}
}

type match struct {
	Path string
	Line int
	Text string
}

func TestSearch(t *testing.T) {
	root := repoTree(t)
	mkTree(t, root, map[string]string{
		"bin.dat":   "needle\x00\x01",
		"crlf.txt":  "first\r\nneedle\r\n",
		"multi.txt": "needle 1\nnothing\nneedle 2\nneedle 3\n",
	})
	tests := []struct {
		name, dir, pattern, glob string
		limit                    int
		want                     []match
		wantTruncated            bool
	}{
		{name: "ignores, .git and binary skipped", pattern: `(?i)needle`, want: []match{
			{"a.go", 1, "package a // needle"},
			{"a/b.go", 3, "func Needle() {}"},
			{"crlf.txt", 2, "needle"},
			{"keep.log", 1, "needle in the kept log"},
			{"multi.txt", 1, "needle 1"},
			{"multi.txt", 3, "needle 2"},
			{"multi.txt", 4, "needle 3"},
			{"sub/deep/y.go", 1, "needle"},
			{"sub/only-top.txt", 1, "needle, not anchored here"},
		}},
		{name: "glob", pattern: `needle`, glob: "*.go", want: []match{{"a.go", 1, "package a // needle"}, {"sub/deep/y.go", 1, "needle"}}},
		{name: "path glob", pattern: `.`, glob: "sub/**/*.go", want: []match{{"sub/deep/y.go", 1, "needle"}, {"sub/x.go", 1, "package sub"}}},
		{name: "cap inside a file", pattern: `needle \d`, limit: 2, want: []match{
			{"multi.txt", 1, "needle 1"}, {"multi.txt", 3, "needle 2"},
		}, wantTruncated: true},
		{name: "cap exactly met", pattern: `needle \d`, limit: 3, want: []match{
			{"multi.txt", 1, "needle 1"}, {"multi.txt", 3, "needle 2"}, {"multi.txt", 4, "needle 3"},
		}},
		{name: "a file as root", dir: "multi.txt", pattern: `2`, want: []match{{"", 3, "needle 2"}}},
		{name: "no match", pattern: `zebra`, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(root, tt.dir)
			ms, truncated, err := tools.Search(t.Context(), dir, regexp.MustCompile(tt.pattern), tt.glob, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []match
			for _, m := range ms {
				rel := rels(t, dir, []string{m.Path})[0]
				if rel == "." {
					rel = ""
				}
				got = append(got, match{rel, m.Line, m.Text})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Search(%q) (-want +got):\n%s", tt.pattern, diff)
			}
			if truncated != tt.wantTruncated {
				t.Errorf("truncated = %v, want %v", truncated, tt.wantTruncated)
			}
		})
	}
}

func TestSearch_Limits(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("a", 1000) + "NEEDLE" + strings.Repeat("b", 1000)
	mkTree(t, root, map[string]string{
		"huge.txt": "needle\n" + strings.Repeat("x", tools.MaxSearchFileBytes),
		"long.txt": long + "\n",
		"many.txt": strings.Repeat("needle\n", 150),
	})
	t.Run("huge file skipped, default cap", func(t *testing.T) {
		ms, truncated, err := tools.Search(t.Context(), root, regexp.MustCompile(`needle`), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != tools.DefaultSearchLimit || !truncated {
			t.Fatalf("Search returned %d matches, truncated=%v; want %d, true", len(ms), truncated, tools.DefaultSearchLimit)
		}
		for _, m := range ms {
			if filepath.Base(m.Path) != "many.txt" {
				t.Fatalf("match in %s, want only many.txt", m.Path)
			}
		}
	})
	t.Run("long line cut around the match", func(t *testing.T) {
		ms, _, err := tools.Search(t.Context(), root, regexp.MustCompile(`NEEDLE`), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 {
			t.Fatalf("got %d matches, want 1", len(ms))
		}
		text := ms[0].Text
		if !strings.Contains(text, "NEEDLE") || !strings.HasPrefix(text, "…") || !strings.HasSuffix(text, "…") {
			t.Errorf("cut line = %q, want the match kept between … marks", text)
		}
		if n := len(strings.Trim(text, "…")); n != tools.MaxMatchLineBytes {
			t.Errorf("cut line has %d bytes of text, want %d", n, tools.MaxMatchLineBytes)
		}
	})
}

func TestSearch_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := tools.Search(ctx, repoTree(t), regexp.MustCompile(`x`), "", 0)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Search with a cancelled context: error = %v, want context.Canceled", err)
	}
}

func TestSearch_NotInRepository(t *testing.T) {
	// Without a .git, the root's own .gitignore still counts.
	root := t.TempDir()
	mkTree(t, root, map[string]string{
		".gitignore":        "vendor/\n",
		"main.go":           "needle\n",
		"vendor/dep.go":     "needle\n",
		"nested/in.go":      "needle\n",
		"nested/.gitignore": "in.go\n",
	})
	ms, _, err := tools.Search(t.Context(), root, regexp.MustCompile(`needle`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, filepath.Base(m.Path))
	}
	if diff := cmp.Diff([]string{"main.go"}, got); diff != "" {
		t.Errorf("Search (-want +got):\n%s", diff)
	}
}

func TestFormatFind(t *testing.T) {
	ws := tools.NewWorkspace("/w/proj")
	tests := []struct {
		name      string
		paths     []string
		truncated bool
		want      string
	}{
		{"none", nil, false, "No files found."},
		{"relative and outside", []string{"/w/proj/a.go", "/w/proj/sub/b.go", "/w/lib/c.go"}, false, "a.go\nsub/b.go\n/w/lib/c.go\n"},
		{"capped", []string{"/w/proj/a.go"}, true, "a.go\n[showing the first 1 files; there are more, so narrow the glob or the path]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tools.FormatFind(ws, tt.paths, tt.truncated)); diff != "" {
				t.Errorf("FormatFind (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFormatSearch(t *testing.T) {
	ws := tools.NewWorkspace("/w/proj")
	ms := []tools.Match{{Path: "/w/proj/a.go", Line: 3, Text: "func A() {}"}, {Path: "/w/lib/b.go", Line: 10, Text: "x"}}
	want := "a.go:3: func A() {}\n/w/lib/b.go:10: x\n[showing the first 2 matches; there are more, so narrow the pattern, the path or the glob]\n"
	if diff := cmp.Diff(want, tools.FormatSearch(ws, ms, true)); diff != "" {
		t.Errorf("FormatSearch (-want +got):\n%s", diff)
	}
	if got := tools.FormatSearch(ws, nil, false); got != "No matches found." {
		t.Errorf("FormatSearch(nil) = %q", got)
	}
}

func TestSearch_UnreadableRootDir(t *testing.T) {
	// Root does not exist: a clear error, not an empty result.
	_, _, err := tools.Search(t.Context(), filepath.Join(t.TempDir(), "gone"), regexp.MustCompile(`x`), "", 0)
	if err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Search of a missing root: error = %v", err)
	}
}
