package release_test

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/release"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// The release build for this machine: the archive holds the binary at the
// path cmd names (executable), with LICENSE and README.md; SHA256SUMS
// carries the archive's real sha256 and the entry none; and the whole registry check
// passes on it, auth and launch checks included.
func TestBuild_HostArchive(t *testing.T) {
	if testkit.Race {
		// A minute under -race, gzipping the 10 MB binary and reading it
		// back in one goroutine: nothing for the detector. The run without
		// -race (CI's second) checks it; the concurrent parts of the
		// check are TestAuthCheck's and TestLaunchCheck's, which run here.
		t.Skip("single-threaded archive work; checked by the run without -race")
	}
	t.Parallel() // most of it waits for go build
	host, ok := release.HostTarget()
	if !ok {
		t.Skip("this platform is not one the registry lists")
	}
	root := filepath.Join("..", "..")
	out := t.TempDir()
	archives, err := release.Build(t.Context(), release.BuildOptions{Root: root, Out: out, Targets: []release.Target{host}})
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != 1 || archives[0].Target != host {
		t.Fatalf("archives = %v, want one for %s", archives, host.Platform)
	}
	a := archives[0]

	data, err := os.ReadFile(filepath.Join(release.EntryDir(out, "rebound"), "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := release.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	b := m.Distribution.Binary[host.Platform]
	if filepath.Base(a.Path) != filepath.Base(b.Archive) || filepath.Base(a.Path) != host.Archive() {
		t.Errorf("archive %s, but agent.json downloads %s", filepath.Base(a.Path), b.Archive)
	}
	sum := sha256File(t, a.Path)
	if a.SHA256 != sum {
		t.Errorf("sha256 of the archive is %s; Build says %q", sum, a.SHA256)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if want := sum + "  " + filepath.Base(a.Path) + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS = %q, want %q", sums, want)
	}
	// The registry's updater would carry a sum over to the next release's
	// archive: the entry has none (CheckBump).
	for p, b := range m.Distribution.Binary {
		if b.SHA256 != "" {
			t.Errorf("%s: the entry has a sha256", p)
		}
	}

	entries := archiveEntries(t, a.Path)
	names := slices.Sorted(maps.Keys(entries))
	if want := []string{"LICENSE", "README.md", strings.TrimPrefix(b.Cmd, "./")}; !slices.Equal(names, sortedCopy(want)) {
		t.Errorf("archive holds %v, want %v", names, sortedCopy(want))
	}
	if mode := entries[strings.TrimPrefix(b.Cmd, "./")]; mode&0o111 != 0o111 {
		t.Errorf("%s has mode %v, want executable", b.Cmd, mode)
	}

	if errs := release.Check(t.Context(), release.CheckOptions{Out: out, ID: "rebound", Schema: registrySchema(t), Log: t.Output()}); len(errs) > 0 {
		for _, err := range errs {
			t.Errorf("check: %v", err)
		}
	}

	// That the same binary makes the same archive is
	// TestWriteArchive_Reproducible's: a second Build here cost a link.
}

// A tampered archive fails the check of its sha256.
func TestCheckArchive_SHA256(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rebound-linux-amd64.tar.gz")
	writeTarGz(t, path, map[string]string{"rebound": "#!/bin/sh\n"})
	b := release.BinaryTarget{Cmd: "./rebound", SHA256: strings.Repeat("0", 64)}
	if _, err := release.CheckArchive(path, b, t.TempDir()); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("error = %v, want a sha256 mismatch", err)
	}
	b.SHA256 = sha256File(t, path)
	if _, err := release.CheckArchive(path, b, t.TempDir()); err != nil {
		t.Errorf("matching sha256: %v", err)
	}
	b.Cmd = "./bin/rebound"
	if _, err := release.CheckArchive(path, b, t.TempDir()); err == nil || !strings.Contains(err.Error(), "at the path cmd names") {
		t.Errorf("error = %v, want the binary missing at cmd's path", err)
	}
}

func TestExtract_RefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.tar.gz")
	writeTarGz(t, path, map[string]string{"../outside": "x"})
	if err := release.Extract(path, filepath.Join(dir, "x")); err == nil {
		t.Error("an entry leaving the directory was extracted")
	}
	if _, err := os.Stat(filepath.Join(dir, "outside")); err == nil {
		t.Error("../outside was written")
	}
}

func TestBuild_Refuses(t *testing.T) {
	root := filepath.Join("..", "..")
	host, ok := release.HostTarget()
	if !ok {
		t.Skip("this platform is not one the registry lists")
	}
	ts := []release.Target{host}
	if _, err := release.Build(t.Context(), release.BuildOptions{Root: root, Out: filepath.Join(root, "dist"), Targets: ts}); err == nil || !strings.Contains(err.Error(), "inside the checkout") {
		t.Errorf("output in the checkout: error = %v", err)
	}
	if _, err := release.Build(t.Context(), release.BuildOptions{Root: root, Out: t.TempDir(), Targets: ts, Tag: "v9.9.9"}); err == nil || !strings.Contains(err.Error(), "not agent.json's version") {
		t.Errorf("tag of another version: error = %v", err)
	}
	// The registry's updater reads a tag back as X.Y.Z only: a release of
	// another form would have its next bump point elsewhere.
	for _, v := range []string{"0.1.0-rc.1", "0.1.0.1", "0.1", "00.1.0"} {
		other := t.TempDir()
		data := edit(t, repoManifest(t), func(m, _ map[string]any) { m["version"] = v })
		if err := os.WriteFile(filepath.Join(other, "agent.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := release.Build(t.Context(), release.BuildOptions{Root: other, Out: t.TempDir(), Targets: ts, Tag: "v" + v}); err == nil || !strings.Contains(err.Error(), "is not X.Y.Z") {
			t.Errorf("version %s: error = %v", v, err)
		}
	}
}

func TestParseTargets(t *testing.T) {
	all, err := release.ParseTargets("all")
	if err != nil || len(all) != 6 {
		t.Errorf("all = %v, %v", all, err)
	}
	two, err := release.ParseTargets("linux-x86_64,windows-aarch64")
	if err != nil || len(two) != 2 || two[1].GOOS != "windows" || two[1].GOARCH != "arm64" {
		t.Errorf("two = %v, %v", two, err)
	}
	if _, err := release.ParseTargets("linux-amd64"); err == nil {
		t.Error("Go's name for a platform was taken for the registry's")
	}
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// archiveEntries lists a .tar.gz's or .zip's files with their modes.
func archiveEntries(t *testing.T, path string) map[string]os.FileMode {
	t.Helper()
	entries := map[string]os.FileMode{}
	if strings.HasSuffix(path, ".zip") {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		for _, f := range zr.File {
			// Windows has no mode bits; the zip carries them anyway.
			entries[f.Name] = f.Mode()
		}
		return entries
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = os.FileMode(h.Mode)
	}
}

func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, files[name])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

// Check takes each archive's sum from SHA256SUMS, now that the entry has
// none: a tampered archive, or one the file does not list, fails.
func TestCheck_SHA256SUMS(t *testing.T) {
	out := t.TempDir()
	entry := release.EntryDir(out, "rebound")
	if err := os.MkdirAll(entry, 0o755); err != nil {
		t.Fatal(err)
	}
	icon, err := os.ReadFile(filepath.Join("..", "..", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"agent.json": repoManifest(t), "icon.svg": icon} {
		if err := os.WriteFile(filepath.Join(entry, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Platforms other than this machine's, so no binary is run.
	var others []release.Target
	host, _ := release.HostTarget()
	for _, tg := range release.Targets {
		if tg != host && tg.GOOS != "windows" {
			others = append(others, tg)
		}
	}
	tampered, unlisted := others[0].Archive(), others[1].Archive()
	for _, name := range []string{tampered, unlisted} {
		writeTarGz(t, filepath.Join(out, name), map[string]string{"rebound": "#!/bin/sh\n"})
	}
	sums := strings.Repeat("0", 64) + "  " + tampered + "\n"
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := release.Check(t.Context(), release.CheckOptions{Out: out, ID: "rebound", Schema: registrySchema(t)})
	var mismatch, missing bool
	for _, err := range errs {
		mismatch = mismatch || strings.Contains(err.Error(), tampered+": sha256 is")
		missing = missing || strings.Contains(err.Error(), unlisted+": not in SHA256SUMS")
	}
	if !mismatch || !missing {
		t.Errorf("errors = %v, want %s's sum refused and %s reported unlisted", errs, tampered, unlisted)
	}
}
