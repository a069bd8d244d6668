package release

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// checkManifestBefore is CheckManifest as it was before it was split into
// named steps, kept while the refactor is checked against it.
func checkManifestBefore(data []byte, dir string, schema *Schema) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if schema != nil {
		if err := schema.Validate(data); err != nil {
			// The registry stops at a schema error too.
			return []error{err}
		}
	}
	m, err := ParseManifest(data)
	if err != nil {
		return []error{err}
	}

	switch id := m.ID; {
	case id == "":
		fail("id is empty")
	case !unicode.IsLetter(rune(id[0])):
		fail("id %q must start with a letter", id)
	case strings.ContainsFunc(id, func(r rune) bool { return !unicode.IsLower(r) && !unicode.IsDigit(r) && r != '-' }):
		fail("id %q must be lowercase letters, digits and hyphens", id)
	case id != dir:
		fail("id %q must match the entry's directory name %q", id, dir)
	}
	if !isSemver(m.Version) {
		fail("version %q must be a semantic version (e.g. 1.0.0)", m.Version)
	}

	d := m.Distribution
	if d.Binary == nil && d.Npx == nil && d.Uvx == nil {
		fail("distribution is empty")
	}
	var oses []string
	for _, platform := range slices.Sorted(maps.Keys(d.Binary)) {
		b := d.Binary[platform]
		t, ok := LookupTarget(platform)
		if !ok {
			fail("unknown platform %q", platform)
			continue
		}
		if !slices.Contains(oses, t.OS()) {
			oses = append(oses, t.OS())
		}
		if b.Cmd == "" {
			fail("%s: cmd is missing", platform)
		}
		if b.Archive == "" {
			fail("%s: archive is missing", platform)
			continue
		}
		lower := strings.ToLower(b.Archive)
		for _, ext := range rejectedArchives {
			if strings.HasSuffix(lower, ext) {
				fail("%s: archive %s is an installer (%s); the registry takes .zip, .tar.gz, .tgz, .tar.bz2, .tbz2 or a raw binary", platform, b.Archive, ext)
			}
		}
		if err := publicHTTPS(b.Archive); err != nil {
			fail("%s: archive %s: %v", platform, b.Archive, err)
		}
		if strings.Contains(b.Archive, "/latest/") {
			fail("%s: archive %s uses /latest/; name the version", platform, b.Archive)
		} else if v := urlVersion.FindStringSubmatch(b.Archive); v == nil {
			fail("%s: archive %s names no version (/download/v%s/)", platform, b.Archive, m.Version)
		} else if got := normalizeVersion(v[1]); got != m.Version {
			fail("%s: archive %s is of version %s, but the entry is %s", platform, b.Archive, got, m.Version)
		}
	}
	if d.Binary != nil {
		for _, os := range requiredOS {
			if !slices.Contains(oses, os) {
				fail("no build for %s: the registry wants darwin, linux and windows", os)
			}
		}
	}
	return errs
}

// CheckManifest finds what it did before its refactor in generated
// manifests: ids and versions good and bad, no distribution, npx only,
// unknown and missing platforms, missing cmd or archive, installers,
// http, private hosts, /latest/, no version or another one in the URL.
func TestCheckManifest_SameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 10))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	platforms := []string{"plan9-mips"}
	for _, t := range Targets {
		platforms = append(platforms, t.Platform)
	}
	for range 20000 {
		m := Manifest{ID: pick("rebound", "", "1x", "Rebound", "re_bound", "other"), Version: pick("1.2.3", "1.2", "1.2.3-rc1", "x.y.z", "1..3"),
			Name: "n", Description: "d"}
		if r.IntN(6) == 0 {
			m.Distribution.Npx = json.RawMessage(`{}`)
		}
		if r.IntN(6) > 0 {
			m.Distribution.Binary = map[string]BinaryTarget{}
			for range r.IntN(7) {
				v := pick("1.2.3", "1.2", "1.2.3.4", "2.0.0", "v1.2.3")
				m.Distribution.Binary[pick(platforms...)] = BinaryTarget{
					Cmd: pick("./rebound", "", "rebound.exe"),
					Archive: pick("", "https://github.com/o/r/releases/download/v"+v+"/a.tar.gz", "https://github.com/o/r/releases/latest/a.zip",
						"http://example.com/download/"+v+"/a.zip", "https://127.0.0.1/download/"+v+"/a.zip", "https://example.com/a.tar.gz",
						"https://example.com/download/"+v+"/a.DMG", "https://host.local/releases/"+v+"/x", "::bad"),
				}
			}
		}
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		dir := pick("rebound", "other")
		if got, want := fmt.Sprint(CheckManifest(data, dir, nil)), fmt.Sprint(checkManifestBefore(data, dir, nil)); got != want {
			t.Fatalf("CheckManifest(%s, %s) = %s; before %s", data, dir, got, want)
		}
	}
}

var (
	_ = strings.Contains
	_ = unicode.IsLetter
	_ = maps.Keys[map[string]bool]
	_ = slices.Contains[[]string]
)
