package release

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The registry's hourly updater (agentclientprotocol/registry:
// .github/workflows/update-versions.yml runs update_versions.py --apply,
// read at 8d8241c; none of it is copied here) bumps a listed entry without
// its authors: for a binary download whose repository is on github.com it
// takes the highest stable release (tags stripped of leading "v"s, 1 and
// 1.2 padded to 1.0.0 and 1.2.0, anything but dotted numbers skipped),
// sets version, and rewrites each archive URL by plain string replacement
// of the old version in a few delimited forms. It never touches sha256,
// cmd or args, and it checks the result only with the registry's build
// (schema, URL versions, URLs reachable) and an auth check on Linux: a
// bumped URL naming a file the release does not have, or a sum of the
// previous archive, would be published. RegistryBump is that rewrite;
// CheckBump checks that Rebound's entry survives it.

// ReleaseURL is where the release workflow publishes t's archive of
// version: the repository's GitHub release for tag v<version>. The
// archive's name carries no version (the registry's bump rewrites
// /v<old>/ in the URL, but not a v<old> inside a name), as other listed
// binary agents' do (argy-code's argy-linux-x64.tar.gz, codeep's
// codeep-linux-x86_64.tar.gz).
func ReleaseURL(repository, version string, t Target) string {
	return repository + "/releases/download/v" + version + "/" + t.Archive()
}

// releaseVersion is what scripts/release publishes: X.Y.Z, no leading
// zeros, nothing after. The updater reads exactly that back from the tag
// vX.Y.Z; from v1.2 it would read 1.2.0 and point at /v1.2.0/, which the
// release at v1.2 is not, and a pre-release it never bumps to.
var releaseVersion = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// IsReleaseVersion reports whether v is a version scripts/release may
// publish (as the tag "v"+v).
func IsReleaseVersion(v string) bool { return releaseVersion.MatchString(v) }

// UpdaterVersion is the version the registry's updater reads from a GitHub
// release's tag, and whether it would bump an entry to it at all (drafts
// and releases marked pre-release it skips before reading the tag).
func UpdaterVersion(tag string) (string, bool) {
	v := strings.TrimLeft(tag, "v") // Python's lstrip("v"): every leading v
	if v == "" {
		return "", false
	}
	// Python's \d is any Unicode decimal digit, as unicode.IsDigit is.
	parts := strings.Split(v, ".")
	for _, p := range parts {
		if p == "" || strings.ContainsFunc(p, func(r rune) bool { return !unicode.IsDigit(r) }) {
			return "", false
		}
	}
	switch len(parts) {
	case 1:
		v += ".0.0"
	case 2:
		v += ".0"
	}
	return v, true
}

// RegistryBump is m as the registry's updater writes it when it bumps m to
// newVersion. Only binary downloads are rewritten here: Rebound has no npx
// or uvx distribution (CheckBump refuses one).
func RegistryBump(m Manifest, newVersion string) Manifest {
	old := m.Version
	m.Version = newVersion
	oldShort, newShort := cutDotZero(old), cutDotZero(newVersion)
	bin := make(map[string]BinaryTarget, len(m.Distribution.Binary))
	for platform, b := range m.Distribution.Binary {
		b.Args = slices.Clone(b.Args)
		b.Env = maps.Clone(b.Env)
		orig := b.Archive
		u := orig
		// In the updater's order: a later form can match text an earlier
		// one wrote.
		for _, f := range []string{"/v%s/", "/%s/", "-%s.", "-%s-", "_%s.", "_%s_"} {
			u = strings.ReplaceAll(u, fmt.Sprintf(f, old), fmt.Sprintf(f, newVersion))
		}
		// The x.y form of x.y.0, only where no full form matched.
		if oldShort != old && u == orig {
			for _, f := range []string{"/%s/", "-%s.", "-%s-"} {
				u = strings.ReplaceAll(u, fmt.Sprintf(f, oldShort), fmt.Sprintf(f, newShort))
			}
		}
		b.Archive = u
		bin[platform] = b
	}
	if m.Distribution.Binary != nil {
		m.Distribution.Binary = bin
	}
	return m
}

// cutDotZero is Python's re.sub(r"\.0$", "", v): one trailing ".0", also
// before a final newline (where Python's $ matches too).
func cutDotZero(v string) string {
	if s, ok := strings.CutSuffix(v, ".0"); ok {
		return s
	}
	if s, ok := strings.CutSuffix(v, ".0\n"); ok {
		return s + "\n"
	}
	return v
}

// nextReleases are the releases a bump from v can go to next: the next
// patch, minor and major (the updater's x.y form differs for x.y.0).
func nextReleases(v string) []string {
	p := releaseVersion.FindStringSubmatch(v)
	if p == nil {
		return nil
	}
	var n [3]int
	for i := range n {
		var err error
		if n[i], err = strconv.Atoi(p[i+1]); err != nil {
			return nil
		}
	}
	return []string{
		fmt.Sprintf("%d.%d.%d", n[0], n[1], n[2]+1),
		fmt.Sprintf("%d.%d.0", n[0], n[1]+1),
		fmt.Sprintf("%d.0.0", n[0]+1),
	}
}

// CheckBump checks that the entry stays right when the registry's updater
// bumps it. It simulates a bump to each of the next patch, minor and major
// releases, as RegistryBump, and checks that every rewritten URL is the
// archive the release of that version publishes for its platform
// (ReleaseURL), that the bumped entry still passes CheckManifest, and that
// no sha256 is left: the updater carries sums over unchanged, so any sum
// would be the previous archive's and every client checking it would
// refuse the new one. It also checks the entry as it stands: a release
// version, and each URL the release's own.
func CheckBump(data []byte, dir string, schema *Schema) []error {
	m, err := ParseManifest(data)
	if err != nil {
		return []error{err}
	}
	var p problems
	if !p.checkBumpable(m) {
		return p
	}
	p.checkReleaseURLs(m)
	if len(p) > 0 {
		return p
	}
	next := nextReleases(m.Version)
	if next == nil {
		p.add("version %q: its next releases cannot be counted", m.Version)
	}
	for _, v := range next {
		p.checkBumpTo(m, v, dir, schema)
	}
	return p
}

// checkBumpable checks that the updater would bump the entry at all, and
// right: ok is false when it would not, and nothing further is worth
// checking.
func (p *problems) checkBumpable(m Manifest) (ok bool) {
	if m.Distribution.Npx != nil || m.Distribution.Uvx != nil {
		p.add("distribution has npx or uvx, which the bump simulation does not cover; Rebound ships binaries only")
	}
	if !strings.Contains(m.Repository, "github.com") {
		// The updater bumps a binary download only from a GitHub repository.
		p.add("repository %q is not on github.com: the registry's updater would never bump the entry", m.Repository)
		return false
	}
	if !IsReleaseVersion(m.Version) {
		p.add("version %q is not X.Y.Z: the registry's updater reads tags back as X.Y.Z and would point at another release", m.Version)
		return false
	}
	return true
}

// checkReleaseURLs checks the entry as it stands: each download is its
// platform's archive of the entry's release, with no sha256.
func (p *problems) checkReleaseURLs(m Manifest) {
	for _, platform := range slices.Sorted(maps.Keys(m.Distribution.Binary)) {
		b := m.Distribution.Binary[platform]
		t, ok := LookupTarget(platform)
		if !ok {
			p.add("unknown platform %q", platform)
			continue
		}
		if want := ReleaseURL(m.Repository, m.Version, t); b.Archive != want {
			p.add("%s: archive is %s, but release v%s publishes %s", platform, b.Archive, m.Version, want)
		}
		if b.SHA256 != "" {
			p.add("%s: sha256 is set, and the registry's updater never refreshes it: after its next bump it would be v%s's sum on another archive; leave it out (the schema makes it optional)", platform, m.Version)
		}
	}
}

// checkBumpTo simulates the updater's bump to release next: every archive
// must be next's own, and the bumped entry must pass CheckManifest.
func (p *problems) checkBumpTo(m Manifest, next, dir string, schema *Schema) {
	bumped := RegistryBump(m, next)
	for _, platform := range slices.Sorted(maps.Keys(bumped.Distribution.Binary)) {
		t, _ := LookupTarget(platform)
		if got, want := bumped.Distribution.Binary[platform].Archive, ReleaseURL(m.Repository, next, t); got != want {
			p.add("bump to %s: %s: the registry's updater rewrites the archive to %s, but release v%s publishes %s", next, platform, got, next, want)
		}
	}
	out, err := bumped.Marshal()
	if err != nil {
		p.add("bump to %s: %v", next, err)
		return
	}
	for _, err := range CheckManifest(out, dir, schema) {
		p.add("bump to %s: %v", next, err)
	}
}
