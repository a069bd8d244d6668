package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// LDFlags strip the symbol table and DWARF: the archives are downloads,
// and a stripped binary starts no slower. The version needs no -X: it
// comes from the module's VCS tag, which cmd/rebound's version() reads.
const LDFlags = "-s -w"

// alsoArchived are the repository's files every archive carries next to
// the binary: the licence must travel with copies of the software.
var alsoArchived = []string{"LICENSE", "README.md"}

// BuildOptions say what Build builds.
type BuildOptions struct {
	Root    string   // the module's root, holding agent.json
	Out     string   // where the archives go; must be outside Root (see Build)
	Targets []Target // nil means all six
	// Tag, when set, makes a release build: the version control stamp is
	// required, and every binary must report Tag as its version, so a
	// build of another commit, of an uncommitted change, or of a tag other
	// than agent.json's version fails instead of being published.
	Tag string
	Log io.Writer // progress; nil discards it
}

// Archive is one built archive.
type Archive struct {
	Target Target
	Path   string
	SHA256 string
}

// Build builds Rebound for each target as the release does (-trimpath,
// LDFlags, CGO_ENABLED=0), packs each binary with alsoArchived into
// Target.Archive, and writes the registry entry (EntryDir: agent.json and
// icon.svg) and SHA256SUMS into Out.
//
// Out must not be inside Root: go build stamps a checkout with untracked
// files as modified, and a modified build does not report the tag's version.
func Build(ctx context.Context, o BuildOptions) ([]Archive, error) {
	m, err := releaseManifest(o.Root, o.Tag)
	if err != nil {
		return nil, err
	}
	if inside(o.Root, o.Out) {
		return nil, fmt.Errorf("output directory %s is inside the checkout %s: go build would stamp the binaries as modified", o.Out, o.Root)
	}
	targets := o.Targets
	if targets == nil {
		targets = Targets
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(o.Out, ".build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	var archives []Archive
	for _, t := range targets {
		a, err := o.buildTarget(ctx, m, work, t)
		if err != nil {
			return nil, err
		}
		archives = append(archives, a)
	}
	return archives, writeEntry(o.Root, o.Out, m, archives)
}

// releaseManifest is root's agent.json, which must name a release version,
// and tag's when tag is set.
func releaseManifest(root, tag string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(root, "agent.json"))
	if err != nil {
		return Manifest{}, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return Manifest{}, err
	}
	if !IsReleaseVersion(m.Version) {
		return Manifest{}, fmt.Errorf("agent.json's version %q is not X.Y.Z: the registry's updater reads a release's tag back as X.Y.Z, so only such tags keep its bumps pointing at real archives", m.Version)
	}
	if tag != "" && tag != "v"+m.Version {
		return Manifest{}, fmt.Errorf("tag %s is not agent.json's version v%s: bump agent.json and release in cmd/rebound/run.go together, then tag", tag, m.Version)
	}
	return m, nil
}

// logf logs progress to o.Log, if set.
func (o BuildOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// buildTarget builds the binary for t in work, checks it, and packs it
// with alsoArchived into its archive in Out.
func (o BuildOptions) buildTarget(ctx context.Context, m Manifest, work string, t Target) (Archive, error) {
	if _, ok := m.Distribution.Binary[t.Platform]; !ok {
		return Archive{}, fmt.Errorf("agent.json has no download for %s", t.Platform)
	}
	o.logf("building %s (GOOS=%s GOARCH=%s)", t.Platform, t.GOOS, t.GOARCH)
	bin := filepath.Join(work, t.Platform, t.Binary())
	if err := goBuild(ctx, o.Root, t, bin, o.Tag != ""); err != nil {
		return Archive{}, err
	}
	stamp, err := checkBinary(bin, t, o.Tag)
	if err != nil {
		return Archive{}, err
	}
	path := filepath.Join(o.Out, t.Archive())
	files := []archiveFile{{name: t.Binary(), path: bin, mode: 0o755}}
	for _, f := range alsoArchived {
		files = append(files, archiveFile{name: f, path: filepath.Join(o.Root, f), mode: 0o644})
	}
	if err := writeArchive(path, files, stamp); err != nil {
		return Archive{}, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Archive{}, err
	}
	o.logf("  %s  %s", sum, filepath.Base(path))
	return Archive{Target: t, Path: path, SHA256: sum}, nil
}

// EntryDir is the directory under Out holding the registry entry as the
// registry's repository wants it: <id>/agent.json and <id>/icon.svg.
func EntryDir(out, id string) string { return filepath.Join(out, id) }

// writeEntry writes the entry as agent.json stands, without sha256: the
// registry's updater carries a sum over unchanged to the next release's
// archive (CheckBump), so a sum in the entry would be wrong after the
// first automatic bump. SHA256SUMS, published beside the archives, holds
// them for people downloading by hand, and Check checks the archives
// against it.
func writeEntry(root, out string, m Manifest, archives []Archive) error {
	var sums strings.Builder
	for _, a := range archives {
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, filepath.Base(a.Path))
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	icon, err := os.ReadFile(filepath.Join(root, "icon.svg"))
	if err != nil {
		return err
	}
	dir := EntryDir(out, m.ID)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "agent.json"), data, 0o644),
		os.WriteFile(filepath.Join(dir, "icon.svg"), icon, 0o644),
		os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums.String()), 0o644),
	)
}

func goBuild(ctx context.Context, root string, t Target, out string, stampVCS bool) error {
	args := []string{"build", "-trimpath", "-ldflags", LDFlags, "-o", out}
	if stampVCS {
		// GOFLAGS may turn stamping off; a release build needs it.
		args = append(args, "-buildvcs=true")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "./cmd/rebound")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOOS="+t.GOOS, "GOARCH="+t.GOARCH, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %v\n%s", t.Platform, err, b)
	}
	return nil
}

// checkBinary reads the binary's build information (any platform's can be
// read here) and checks that it is what the release promises: the target's
// platform, -trimpath, stripped as LDFlags strip and, for a release, the
// tag's version. It
// returns the commit time, which the archive's entries are dated with so
// that the same commit gives the same archive.
func checkBinary(path string, t Target, tag string) (time.Time, error) {
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", path, err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var problems []string
	if settings["GOOS"] != t.GOOS || settings["GOARCH"] != t.GOARCH {
		problems = append(problems, fmt.Sprintf("built for %s/%s", settings["GOOS"], settings["GOARCH"]))
	}
	if settings["-trimpath"] != "true" {
		problems = append(problems, "not built with -trimpath")
	}
	// With -trimpath the build information leaves out -ldflags, so what
	// they did is checked in the binary itself.
	problems = append(problems, unstripped(path, t.GOOS)...)
	if tag != "" && bi.Main.Version != tag {
		problems = append(problems, fmt.Sprintf("reports version %q, not the tag %s (built from another commit, or from a checkout with changes?)", bi.Main.Version, tag))
	}
	if len(problems) > 0 {
		return time.Time{}, fmt.Errorf("%s binary: %s", t.Platform, strings.Join(problems, "; "))
	}
	stamp, err := time.Parse(time.RFC3339, settings["vcs.time"])
	if err != nil {
		stamp = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return stamp, nil
}

// unstripped says what -s (the symbol table) and -w (DWARF) should have
// removed but did not. Mach-O keeps a symbol table for the dynamic loader,
// so there only DWARF is looked for.
func unstripped(path, goos string) []string {
	var symbols, dwarf bool
	switch goos {
	case "windows":
		f, err := pe.Open(path)
		if err != nil {
			return []string{err.Error()}
		}
		defer f.Close()
		symbols = len(f.Symbols) > 0
		dwarf = f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil
	case "darwin":
		f, err := macho.Open(path)
		if err != nil {
			return []string{err.Error()}
		}
		defer f.Close()
		dwarf = f.Section("__debug_info") != nil || f.Section("__zdebug_info") != nil
	default:
		f, err := elf.Open(path)
		if err != nil {
			return []string{err.Error()}
		}
		defer f.Close()
		syms, err := f.Symbols()
		symbols = err == nil && len(syms) > 0
		dwarf = f.Section(".debug_info") != nil || f.Section(".zdebug_info") != nil
	}
	var problems []string
	if symbols {
		problems = append(problems, "has a symbol table (not linked with -s)")
	}
	if dwarf {
		problems = append(problems, "has DWARF (not linked with -w)")
	}
	return problems
}

type archiveFile struct {
	name string // in the archive, at its top level
	path string
	mode os.FileMode
}

// writeArchive packs files into a .tar.gz or, by path's extension, a .zip,
// with fixed dates, modes and order and no owner names.
func writeArchive(path string, files []archiveFile, stamp time.Time) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	if strings.HasSuffix(path, ".zip") {
		return writeZip(f, files, stamp)
	}
	return writeTarGz(f, files, stamp)
}

// writeZip packs files into a zip, deflated.
func writeZip(w io.Writer, files []archiveFile, stamp time.Time) error {
	zw := zip.NewWriter(w)
	for _, af := range files {
		h := &zip.FileHeader{Name: af.name, Method: zip.Deflate, Modified: stamp}
		h.SetMode(af.mode)
		fw, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if err := copyFile(fw, af.path); err != nil {
			return err
		}
	}
	return zw.Close()
}

// writeTarGz packs files into a gzipped PAX tar of regular files.
func writeTarGz(w io.Writer, files []archiveFile, stamp time.Time) error {
	gz, err := gzip.NewWriterLevel(w, gzip.DefaultCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, af := range files {
		if err := addTarFile(tw, af, stamp); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// addTarFile writes af into tw as a regular file dated stamp.
func addTarFile(tw *tar.Writer, af archiveFile, stamp time.Time) error {
	st, err := os.Stat(af.path)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: af.name, Mode: int64(af.mode), Size: st.Size(), ModTime: stamp, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	return copyFile(tw, af.path)
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// inside reports whether path is root or below it.
func inside(root, path string) bool {
	r, err1 := filepath.Abs(root)
	p, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return false
	}
	rel, err := filepath.Rel(r, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ParseTargets reads -targets: "all", "host", or platform keys separated
// by commas.
func ParseTargets(s string) ([]Target, error) {
	switch s {
	case "", "all":
		return slices.Clone(Targets), nil
	case "host":
		t, ok := HostTarget()
		if !ok {
			return nil, errors.New("this machine's platform is not one the registry lists")
		}
		return []Target{t}, nil
	}
	var ts []Target
	for _, p := range strings.Split(s, ",") {
		t, ok := LookupTarget(strings.TrimSpace(p))
		if !ok {
			return nil, fmt.Errorf("unknown platform %q; the platforms are darwin-aarch64, darwin-x86_64, linux-aarch64, linux-x86_64, windows-aarch64, windows-x86_64", p)
		}
		ts = append(ts, t)
	}
	return ts, nil
}
