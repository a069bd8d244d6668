package release_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/release"
)

// The updater's rewrite, form by form, as update_versions.py applies it
// (agentclientprotocol/registry, read at 8d8241c).
func TestRegistryBump_Rules(t *testing.T) {
	for _, tc := range []struct{ old, new, url, want string }{
		{"1.6.0", "1.7.0", "https://h/o/r/releases/download/v1.6.0/x.tar.gz", "https://h/o/r/releases/download/v1.7.0/x.tar.gz"},
		{"1.6.0", "1.7.0", "https://h/1.6.0/x.tar.gz", "https://h/1.7.0/x.tar.gz"},
		{"1.6.0", "1.7.0", "https://h/v1.6.0/x-1.6.0.tar.gz", "https://h/v1.7.0/x-1.7.0.tar.gz"},
		{"1.6.0", "1.7.0", "https://h/v1.6.0/x-1.6.0-linux.zip", "https://h/v1.7.0/x-1.7.0-linux.zip"},
		{"1.6.0", "1.7.0", "https://h/v1.6.0/x_1.6.0_linux.zip", "https://h/v1.7.0/x_1.7.0_linux.zip"},
		{"1.6.0", "1.7.0", "https://h/v1.6.0/x_1.6.0.zip", "https://h/v1.7.0/x_1.7.0.zip"},
		// What this issue is about: a v inside the name is no form.
		{"0.1.0", "0.1.1", "https://h/v0.1.0/rebound-v0.1.0-linux-amd64.tar.gz", "https://h/v0.1.1/rebound-v0.1.0-linux-amd64.tar.gz"},
		// x.y for x.y.0, only where no full form matched.
		{"1.6.0", "1.7.0", "https://h/1.6/x-1.6-linux.tar.gz", "https://h/1.7/x-1.7-linux.tar.gz"},
		{"1.6.0", "1.7.0", "https://h/d/x-1.6.tar.gz", "https://h/d/x-1.7.tar.gz"},
		{"2.2.0", "2.2.1", "https://h/v2.2.0/x-2.2.0.zip", "https://h/v2.2.1/x-2.2.1.zip"},
		{"2.2.0", "2.3.0", "https://h/v2.2.0/x-2.2.zip", "https://h/v2.3.0/x-2.2.zip"},
		// Every occurrence, not only the first.
		{"1.0.0", "2.0.0", "https://h/v1.0.0/a/v1.0.0/x", "https://h/v2.0.0/a/v2.0.0/x"},
		// Occurrences sharing a slash: the second is left, as by Python.
		{"1.0.0", "2.0.0", "https://h/v1.0.0/v1.0.0/x", "https://h/v2.0.0/v1.0.0/x"},
	} {
		m := release.Manifest{Version: tc.old, Distribution: release.Distribution{Binary: map[string]release.BinaryTarget{
			"linux-x86_64": {Archive: tc.url, Cmd: "./x", Args: []string{"a"}, SHA256: strings.Repeat("a", 64)},
		}}}
		got := release.RegistryBump(m, tc.new)
		b := got.Distribution.Binary["linux-x86_64"]
		if b.Archive != tc.want || got.Version != tc.new {
			t.Errorf("bump %s→%s of %s = %s (version %s), want %s", tc.old, tc.new, tc.url, b.Archive, got.Version, tc.want)
		}
		// Nothing else changes: sums and commands are carried over as they are.
		if b.SHA256 != strings.Repeat("a", 64) || b.Cmd != "./x" || len(b.Args) != 1 {
			t.Errorf("bump changed more than the URL: %+v", b)
		}
		if m.Distribution.Binary["linux-x86_64"].Archive != tc.url {
			t.Error("RegistryBump changed the manifest it was given")
		}
	}
}

func TestUpdaterVersion(t *testing.T) {
	for _, tc := range []struct {
		tag, want string
		ok        bool
	}{
		{"v1.2.3", "1.2.3", true},
		{"1.2.3", "1.2.3", true},
		{"vv1.2.3", "1.2.3", true}, // lstrip("v") strips them all
		{"v1.2", "1.2.0", true},
		{"v7", "7.0.0", true},
		{"v1.2.3.4", "1.2.3.4", true},
		{"v1.2.3-rc.1", "", false},
		{"v1.2.3+build", "", false},
		{"V1.2.3", "", false},
		{"release-1.2.3", "", false},
		{"v1..2", "", false},
		{"v", "", false},
		{"", "", false},
		{"v١.٢.٣", "١.٢.٣", true}, // Python's \d is any decimal digit
	} {
		if got, ok := release.UpdaterVersion(tc.tag); got != tc.want || ok != tc.ok {
			t.Errorf("UpdaterVersion(%q) = %q, %v; want %q, %v", tc.tag, got, ok, tc.want, tc.ok)
		}
	}
}

// versionGen makes versions that are often substrings of one another
// (1 and 11, 1.1.1 and 11.1.11, 0.1.0 and 10.1.0) and carry pre-release
// and build parts.
type versionGen struct{ r *rand.Rand }

func (g versionGen) num() string {
	return []string{"0", "1", "2", "9", "10", "11", "12", "19", "100", "101", "110"}[g.r.IntN(11)]
}

func (g versionGen) core() string { return g.num() + "." + g.num() + "." + g.num() }

// entry is any version an entry may hold: a release, or one with a
// pre-release or build part (a hand-made entry).
func (g versionGen) entry() string {
	v := g.core()
	if g.r.IntN(3) == 0 {
		v += "-" + []string{"rc.1", "alpha", "0.1.0", "1", "rc.0", g.core()}[g.r.IntN(6)]
	}
	if g.r.IntN(4) == 0 {
		v += "+" + []string{"build.5", "001", "sha.abc", g.core()}[g.r.IntN(4)]
	}
	return v
}

// tag is a tag a repository might push, in the forms the updater reads.
func (g versionGen) tag() string {
	switch g.r.IntN(8) {
	case 0:
		return g.core()
	case 1:
		return "v" + g.num() + "." + g.num()
	case 2:
		return "vv" + g.core()
	case 3:
		return "v" + g.core() + "." + g.num()
	case 4:
		return "v" + g.entry()
	default:
		return "v" + g.core()
	}
}

// entryAt is the repository's agent.json moved to version, its URLs the
// release's.
func entryAt(t *testing.T, version string) release.Manifest {
	t.Helper()
	m, err := release.ParseManifest(repoManifest(t))
	if err != nil {
		t.Fatal(err)
	}
	m.Version = version
	for _, tg := range release.Targets {
		b := m.Distribution.Binary[tg.Platform]
		b.Archive = release.ReleaseURL(m.Repository, version, tg)
		m.Distribution.Binary[tg.Platform] = b
	}
	return m
}

// The property: from whatever version an entry holds, the updater's bump
// to any tag scripts/release may publish leaves every URL the archive
// that release publishes, and reads the version from the tag exactly.
// The same bumps of names carrying the version (as before) break every
// time, so the property can fail.
func TestRegistryBump_Property(t *testing.T) {
	g := versionGen{rand.New(rand.NewPCG(34, 1))}
	bumps := 0
	for range 3000 {
		old, tag := g.entry(), g.tag()
		next, picked := release.UpdaterVersion(tag)
		published := strings.HasPrefix(tag, "v") && release.IsReleaseVersion(tag[1:])
		if published && (!picked || next != tag[1:]) {
			t.Fatalf("the release tag %s is read by the updater as %q, %v", tag, next, picked)
		}
		if !published || next == old {
			continue // the release never makes that tag; or there is no bump
		}
		bumps++
		m := entryAt(t, old)
		got := release.RegistryBump(m, next)
		if got.Version != next {
			t.Fatalf("bump %s→%s: version %s", old, next, got.Version)
		}
		for _, tg := range release.Targets {
			if a, want := got.Distribution.Binary[tg.Platform].Archive, release.ReleaseURL(m.Repository, next, tg); a != want {
				t.Fatalf("bump %s→%s (tag %s): %s is %s, want %s", old, next, tag, tg.Platform, a, want)
			}
			versioned := m
			versioned.Distribution.Binary = map[string]release.BinaryTarget{tg.Platform: {
				Archive: fmt.Sprintf("%s/releases/download/v%s/rebound-v%s-%s-%s.tar.gz", m.Repository, old, old, tg.GOOS, tg.GOARCH),
			}}
			if a := release.RegistryBump(versioned, next).Distribution.Binary[tg.Platform].Archive; strings.Contains(a, "rebound-v"+next+"-") {
				t.Fatalf("bump %s→%s rewrote a versioned name: %s", old, next, a)
			}
		}
	}
	if bumps < 1000 {
		t.Errorf("only %d bumps were generated", bumps)
	}
}

// Every release version's entry passes CheckBump: its next patch, minor
// and major bumps name real archives and validate.
func TestCheckBump_Property(t *testing.T) {
	schema := registrySchema(t)
	g := versionGen{rand.New(rand.NewPCG(34, 2))}
	for range 200 {
		m := entryAt(t, g.core())
		data, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if errs := release.CheckBump(data, "rebound", schema); len(errs) > 0 {
			t.Fatalf("version %s: %d problems, the first: %v", m.Version, len(errs), errs[0])
		}
	}
}

func TestCheckBump(t *testing.T) {
	good := repoManifest(t)
	schema := registrySchema(t)
	for _, err := range release.CheckBump(good, "rebound", schema) {
		t.Errorf("agent.json: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(m, bin map[string]any)
		want string
	}{
		{"a sum the updater would carry over", func(m, bin map[string]any) {
			target(bin, "linux-x86_64")["sha256"] = strings.Repeat("0", 64)
		}, "never refreshes it"},
		{"names carrying the version", func(m, bin map[string]any) {
			a := target(bin, "darwin-aarch64")
			a["archive"] = strings.Replace(a["archive"].(string), "/rebound-", "/rebound-v0.1.0-", 1)
		}, "but release v0.1.0 publishes"},
		{"a pre-release", func(m, bin map[string]any) {
			m["version"] = "0.1.0-rc.1"
			for _, p := range bin {
				a := p.(map[string]any)
				a["archive"] = strings.Replace(a["archive"].(string), "/v0.1.0/", "/v0.1.0-rc.1/", 1)
			}
		}, "is not X.Y.Z"},
		{"two-part version", func(m, bin map[string]any) { m["version"] = "0.1" }, "is not X.Y.Z"},
		{"not on GitHub", func(m, bin map[string]any) { m["repository"] = "https://example.com/rebound" }, "never bump"},
		// The owner's name holds "-0.1.0.", a form the updater rewrites too.
		{"repository the rewrite reaches", func(m, bin map[string]any) {
			m["repository"] = "https://github.com/rebound-0.1.0.x/rebound"
			for _, p := range bin {
				a := p.(map[string]any)
				a["archive"] = strings.Replace(a["archive"].(string), "/rebound-agent/", "/rebound-0.1.0.x/", 1)
			}
		}, "the registry's updater rewrites the archive to https://github.com/rebound-0.1.1.x/"},
		{"npx", func(m, bin map[string]any) {
			m["distribution"].(map[string]any)["npx"] = map[string]any{"package": "rebound@0.1.0"}
		}, "npx or uvx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := release.CheckBump(edit(t, good, tc.edit), "rebound", schema)
			wantError(t, errs, tc.want)
		})
	}
}

// The bumped entry is checked as the registry's build checks it (here it
// fails only for the directory it is checked in).
func TestCheckBump_BumpedEntryValidates(t *testing.T) {
	errs := release.CheckBump(repoManifest(t), "other", registrySchema(t))
	for _, next := range []string{"0.1.1", "0.2.0", "1.0.0"} {
		found := false
		for _, err := range errs {
			found = found || strings.Contains(err.Error(), "bump to "+next+": id")
		}
		if !found {
			t.Errorf("errors = %v, want the bump to %s checked against the directory", errs, next)
		}
	}
}
