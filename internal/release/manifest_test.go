package release_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/release"
)

func repoManifest(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func registrySchema(t *testing.T) *release.Schema {
	t.Helper()
	s, err := release.LoadSchema(filepath.Join("..", "..", "testdata", "registry", "agent.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// edit returns agent.json with f applied to its decoded form.
func edit(t *testing.T, data []byte, f func(m map[string]any, bin map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	f(m, m["distribution"].(map[string]any)["binary"].(map[string]any))
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// wantError fails t unless one of errs contains want.
func wantError(t *testing.T, errs []error, want string) {
	t.Helper()
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return
		}
	}
	t.Errorf("errors = %v, want one containing %q", errs, want)
}

func target(bin map[string]any, platform string) map[string]any {
	return bin[platform].(map[string]any)
}

func TestCheckManifest(t *testing.T) {
	good := repoManifest(t)
	schema := registrySchema(t)
	for _, err := range release.CheckManifest(good, "rebound", schema) {
		t.Errorf("agent.json: %v", err)
	}

	for _, tc := range []struct {
		name string
		dir  string
		edit func(m, bin map[string]any)
		want string
	}{
		{"schema: unknown field in a download", "rebound", func(m, bin map[string]any) { target(bin, "linux-x86_64")["url"] = "x" }, "schema"},
		{"schema: bad sha256", "rebound", func(m, bin map[string]any) { target(bin, "linux-x86_64")["sha256"] = "abc" }, "schema"},
		{"schema: uppercase id", "rebound", func(m, bin map[string]any) { m["id"] = "Rebound" }, "schema"},
		{"id is not the directory", "other", func(m, bin map[string]any) {}, `must match the entry's directory name "other"`},
		// The schema's pattern allows a suffix on the third number; the registry does not.
		{"version not semver", "rebound", func(m, bin map[string]any) { m["version"] = "0.1.0-rc1" }, "semantic version"},
		{"latest", "rebound", func(m, bin map[string]any) {
			target(bin, "darwin-x86_64")["archive"] = "https://github.com/rebound-agent/rebound/releases/latest/download/rebound-darwin-amd64.tar.gz"
		}, "/latest/"},
		{"another version", "rebound", func(m, bin map[string]any) {
			a := target(bin, "windows-x86_64")
			a["archive"] = strings.ReplaceAll(a["archive"].(string), "v0.1.0", "v0.0.9")
		}, "is of version 0.0.9, but the entry is"},
		{"URL names no version", "rebound", func(m, bin map[string]any) {
			target(bin, "linux-aarch64")["archive"] = "https://example.com/rebound-linux-arm64.tar.gz"
		}, "names no version"},
		{"not https", "rebound", func(m, bin map[string]any) {
			a := target(bin, "linux-aarch64")
			a["archive"] = strings.Replace(a["archive"].(string), "https:", "http:", 1)
		}, "not https"},
		{"private host", "rebound", func(m, bin map[string]any) {
			target(bin, "linux-aarch64")["archive"] = "https://127.0.0.1/download/v0.1.0/rebound.tar.gz"
		}, "not public"},
		{"installer", "rebound", func(m, bin map[string]any) {
			a := target(bin, "darwin-aarch64")
			a["archive"] = strings.Replace(a["archive"].(string), ".tar.gz", ".dmg", 1)
		}, "installer (.dmg)"},
		{"no windows", "rebound", func(m, bin map[string]any) {
			delete(bin, "windows-x86_64")
			delete(bin, "windows-aarch64")
		}, "no build for windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := release.CheckManifest(edit(t, good, tc.edit), tc.dir, schema)
			wantError(t, errs, tc.want)
		})
	}
}

// Without the schema (which catches most of these first) the registry's
// own rules still hold.
func TestCheckManifest_RulesBesideTheSchema(t *testing.T) {
	good := repoManifest(t)
	for _, tc := range []struct {
		name string
		edit func(m, bin map[string]any)
		want string
	}{
		{"id with a capital", func(m, bin map[string]any) { m["id"] = "reBound" }, "lowercase"},
		{"id starting with a digit", func(m, bin map[string]any) { m["id"] = "1rebound" }, "start with a letter"},
		{"unknown platform", func(m, bin map[string]any) { bin["plan9-x86_64"] = target(bin, "linux-x86_64") }, `unknown platform "plan9-x86_64"`},
		{"no cmd", func(m, bin map[string]any) { delete(target(bin, "linux-x86_64"), "cmd") }, "cmd is missing"},
		{"two-part version", func(m, bin map[string]any) { m["version"] = "1.0" }, "semantic version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := release.CheckManifest(edit(t, good, tc.edit), "rebound", nil)
			wantError(t, errs, tc.want)
		})
	}
}

// A manifest written back keeps every field and reads the same.
func TestManifest_RoundTrip(t *testing.T) {
	data := repoManifest(t)
	m, err := release.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(data) {
		t.Errorf("agent.json written back differs:\n%s\nwant\n%s", out, data)
	}
	if _, err := release.ParseManifest([]byte(`{"id":"x","extra":1}`)); err == nil {
		t.Error("a field Manifest does not know was dropped without an error")
	}
}
