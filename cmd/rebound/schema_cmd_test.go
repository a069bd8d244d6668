package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkedInSchemas are the files under schema/ in the repository, which
// schema's own test keeps equal to what the Go types generate.
func checkedInSchemas(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "schema", "*.schema.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no checked-in schemas: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

func runSchemaCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = runEnv(t.Context(), append([]string{"schema"}, args...), nil, &out, &errb, env{})
	return code, out.String(), errb.String()
}

func TestSchema_OutWritesCheckedInFiles(t *testing.T) {
	want := checkedInSchemas(t)
	dir := filepath.Join(t.TempDir(), "new", "dir") // created by the command
	code, stdout, stderr := runSchemaCLI(t, "--out", dir)
	if code != 0 {
		t.Fatalf("exit code = %d, want 0\n%s", code, stderr)
	}
	var wantPaths []string
	for name := range want {
		wantPaths = append(wantPaths, filepath.Join(dir, name))
	}
	slices.Sort(wantPaths)
	if diff := cmp.Diff(strings.Join(wantPaths, "\n")+"\n", stdout); diff != "" {
		t.Errorf("paths printed (-want +got):\n%s", diff)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("wrote %d files, want %d (one per checked-in schema)", len(entries), len(want))
	}
	for name, w := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if diff := cmp.Diff(string(w), string(got)); diff != "" {
			t.Errorf("%s differs from schema/%s; run `go test ./schema -update` (-checked-in +written):\n%s", name, name, diff)
		}
	}

	// Naming schemas writes only those; rewriting is fine.
	code, stdout, stderr = runSchemaCLI(t, "--out", dir, "config")
	if code != 0 || stdout != filepath.Join(dir, "config.schema.json")+"\n" {
		t.Errorf("--out DIR config: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

func TestSchema_PrintsOneSchema(t *testing.T) {
	for file, want := range checkedInSchemas(t) {
		name := strings.TrimSuffix(file, ".schema.json")
		for _, arg := range []string{name, file} {
			code, stdout, stderr := runSchemaCLI(t, arg)
			if code != 0 {
				t.Errorf("rebound schema %s: exit %d\n%s", arg, code, stderr)
			}
			if diff := cmp.Diff(string(want), stdout); diff != "" {
				t.Errorf("rebound schema %s differs from schema/%s (-checked-in +printed):\n%s", arg, file, diff)
			}
		}
	}
}

func TestSchema_ListsSchemas(t *testing.T) {
	code, stdout, _ := runSchemaCLI(t)
	if code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	want := checkedInSchemas(t)
	if len(lines) != len(want) {
		t.Errorf("%d lines, want one per schema (%d):\n%s", len(lines), len(want), stdout)
	}
	for file := range want {
		name := strings.TrimSuffix(file, ".schema.json")
		if !slices.ContainsFunc(lines, func(l string) bool {
			f := strings.Fields(l)
			return len(f) > 2 && f[0] == name && f[1] == file
		}) {
			t.Errorf("no line for %s (%s) with a title:\n%s", name, file, stdout)
		}
	}
	if !strings.Contains(stdout, "Rebound configuration (config.toml)") {
		t.Errorf("titles missing:\n%s", stdout)
	}
}

func TestSchema_UsageErrors(t *testing.T) {
	code, stdout, stderr := runSchemaCLI(t, "confg")
	if code != 2 || stdout != "" {
		t.Errorf("unknown name: exit %d stdout %q, want 2 and nothing", code, stdout)
	}
	for _, w := range []string{`unknown schema "confg"`, "config", "session-event", "retry-progress", "mock-script"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}

	dir := t.TempDir()
	if code, _, stderr := runSchemaCLI(t, "--out", dir, "config", "nope"); code != 2 || !strings.Contains(stderr, `"nope"`) {
		t.Errorf("--out with an unknown name: exit %d, stderr %q", code, stderr)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("an unknown name still wrote %d files", len(entries))
	}
	if code, _, stderr := runSchemaCLI(t, "config", "mock-script"); code != 2 || !strings.Contains(stderr, "--out") {
		t.Errorf("two names without --out: exit %d, stderr %q", code, stderr)
	}
	if code, _, _ := runSchemaCLI(t, "--nope"); code != 2 {
		t.Errorf("unknown flag: exit %d, want 2", code)
	}
}

func TestSchema_Help(t *testing.T) {
	code, stdout, stderr := runSchemaCLI(t, "--help")
	if code != 0 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want 0 and nothing on stdout", code, stdout)
	}
	for _, w := range []string{"Usage: rebound schema", "-out DIR", "NAME", "config.schema.json", "session-event.schema.json", "retry-progress.schema.json", "mock-script.schema.json"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("help lacks %q:\n%s", w, stderr)
		}
	}
	var all strings.Builder
	runEnv(t.Context(), []string{"--help"}, nil, io.Discard, &all, env{})
	if !helpListsCommand(all.String(), "schema") {
		t.Errorf("rebound --help does not list schema:\n%s", all.String())
	}
}
