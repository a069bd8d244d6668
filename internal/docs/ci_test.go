package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const ciRun = "../../.ci/run"

// Every fuzz target in the module is fuzzed in CI: a target nobody runs
// only replays its seeds, and targets are added often. CI's lines read
// `fuzz FuzzName ./dir`.
func TestCIRun_FuzzesEveryTarget(t *testing.T) {
	ci := string(readFile(t, ciRun))
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^fuzz (Fuzz\w+) (\S+)$`).FindAllStringSubmatch(ci, -1) {
		listed[m[1]+" "+m[2]] = true
	}
	def := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)
	found := 0
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			found++
			line := m[1] + " ./" + filepath.ToSlash(rel)
			if !listed[line] {
				t.Errorf("%s is not fuzzed in CI: add `fuzz %s` to .ci/run beside the others", m[1], line)
			}
			delete(listed, line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no fuzz targets found")
	}
	for line := range listed {
		t.Errorf(".ci/run fuzzes %s, which is no fuzz target in the module", line)
	}
}

// Every benchmark runs once in CI, so none rots unnoticed.
func TestCIRun_RunsEveryBenchmarkOnce(t *testing.T) {
	ci := string(readFile(t, ciRun))
	if !regexp.MustCompile(`(?m)^go test -run '\^\$' -bench \. -benchtime 1x .*\./\.\.\.$`).MatchString(ci) {
		t.Errorf(".ci/run does not run every benchmark once (go test -run '^$' -bench . -benchtime 1x ./...)")
	}
}

// CI runs every test once without -race too: the allocation bounds are
// skipped under it (raceEnabled), where sync.Pool drops what it holds.
func TestCIRun_RunsTheTestsWithoutRace(t *testing.T) {
	for line := range strings.Lines(string(readFile(t, ciRun))) {
		i := strings.Index(line, "go test ")
		// A command, not a comment or a message quoting one.
		if i < 0 || strings.HasPrefix(strings.TrimSpace(line), "#") || strings.Count(line[:i], `"`)%2 == 1 {
			continue
		}
		if cmd := line[i:]; strings.Contains(cmd, " ./...") && !strings.Contains(cmd, "-race") && !strings.Contains(cmd, "-run") {
			return
		}
	}
	t.Error(".ci/run has no `go test ./...` without -race: the allocation bounds would never run")
}
