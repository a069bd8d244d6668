package release

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// CheckEntry checks a registry entry directory (<id>/agent.json and
// <id>/icon.svg) as the registry's build does before it fetches anything.
func CheckEntry(dir string, schema *Schema) []error {
	var errs []error
	data, err := os.ReadFile(filepath.Join(dir, "agent.json"))
	if err != nil {
		return []error{err}
	}
	errs = append(errs, CheckManifest(data, filepath.Base(dir), schema)...)
	// The registry requires the icon.
	icon, err := os.ReadFile(filepath.Join(dir, "icon.svg"))
	if err != nil {
		return append(errs, fmt.Errorf("icon.svg is required: %w", err))
	}
	return append(errs, CheckIcon(icon)...)
}

// CheckArchive checks one downloaded (here: built) archive against its
// manifest entry: its sha256 when b gives one, and that it
// extracts safely with the executable at the path cmd names. It extracts
// into dir/extracted, as the registry's CI does, and returns the Launch
// for that executable.
func CheckArchive(archive string, b BinaryTarget, dir string) (Launch, error) {
	if b.SHA256 != "" {
		sum, err := fileSHA256(archive)
		if err != nil {
			return Launch{}, err
		}
		if !strings.EqualFold(sum, b.SHA256) {
			return Launch{}, fmt.Errorf("%s: sha256 is %s, but agent.json says %s", filepath.Base(archive), sum, b.SHA256)
		}
	}
	extracted := filepath.Join(dir, "extracted")
	if err := Extract(archive, extracted); err != nil {
		return Launch{}, fmt.Errorf("%s: %w", filepath.Base(archive), err)
	}
	// The registry finds cmd anywhere in the archive; Rebound's is exactly
	// where cmd says, so that any client's plain join finds it too.
	rel := strings.TrimPrefix(b.Cmd, "./")
	exe := filepath.Join(extracted, filepath.FromSlash(rel))
	st, err := os.Stat(exe)
	switch {
	case err != nil:
		return Launch{}, fmt.Errorf("%s: no %s at the path cmd names: %w", filepath.Base(archive), b.Cmd, err)
	case !st.Mode().IsRegular():
		return Launch{}, fmt.Errorf("%s: %s is not a file", filepath.Base(archive), b.Cmd)
	}
	return Launch{Path: exe, Args: b.Args, Dir: extracted, Env: b.Env}, nil
}

// Extract unpacks a .tar.gz or .zip into dir, refusing what Python's
// tarfile "data" filter refuses: paths leaving dir and links.
func Extract(archive, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if strings.HasSuffix(archive, ".zip") {
		return extractZip(archive, dir)
	}
	return extractTarGz(archive, dir)
}

func extractZip(archive, dir string) error {
	zr, err := zip.OpenReader(archive)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("entry %q is a link", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		err = extractEntry(dir, f.Name, f.Mode(), f.FileInfo().IsDir(), rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func extractTarGz(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		default:
			return fmt.Errorf("entry %q is not a file or directory", h.Name)
		}
		if err := extractEntry(dir, h.Name, os.FileMode(h.Mode), h.Typeflag == tar.TypeDir, tr); err != nil {
			return err
		}
	}
}

// extractEntry writes the archive entry name (a directory when isDir, else
// a file of r's bytes) under dir, refusing a name that leaves it. A file
// keeps its executable bits, never more than 0755.
func extractEntry(dir, name string, mode os.FileMode, isDir bool, r io.Reader) error {
	clean := path.Clean(name)
	if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || strings.Contains(name, `\`) {
		return fmt.Errorf("entry %q leaves the extraction directory", name)
	}
	dst := filepath.Join(dir, filepath.FromSlash(clean))
	if isDir {
		return os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm()&0o755|0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	return errors.Join(err, f.Close())
}

// CheckOptions say what Check checks.
type CheckOptions struct {
	Out    string  // a Build's output: the archives and the entry directory
	ID     string  // the entry's id, naming its directory under Out
	Schema *Schema // the registry's agent.schema.json
	// AuthTimeout and LaunchTimeout default to the registry's.
	AuthTimeout, LaunchTimeout time.Duration
	Log                        io.Writer
}

// Check is everything the registry's CI checks of the entry in Out except
// fetching URLs: the entry (CheckEntry), that it survives the registry
// updater's bumps (CheckBump), each archive Out holds (CheckArchive, its
// sum from Out's SHA256SUMS), and, for this machine's platform, the auth check and
// the launch check against the extracted binary. It also checks that the
// binary's agentInfo names the entry's id and reports its version (a
// release build) or a -dev build of it.
func Check(ctx context.Context, o CheckOptions) []error {
	entry := EntryDir(o.Out, o.ID)
	errs := CheckEntry(entry, o.Schema)
	o.logf("entry %s: schema, id, version, downloads, icon: %d problem(s)", entry, len(errs))
	data, err := os.ReadFile(filepath.Join(entry, "agent.json"))
	if err != nil {
		return append(errs, err)
	}
	bump := CheckBump(data, o.ID, o.Schema)
	o.logf("entry %s: the registry updater's next bumps (patch, minor, major): %d problem(s)", entry, len(bump))
	errs = append(errs, bump...)
	m, err := ParseManifest(data)
	if err != nil {
		return append(errs, err)
	}
	o.logBumpExample(m)
	sums, err := readSums(filepath.Join(o.Out, "SHA256SUMS"))
	if err != nil {
		return append(errs, err)
	}
	sandbox, err := os.MkdirTemp("", "rebound-registry-check-")
	if err != nil {
		return append(errs, err)
	}
	defer os.RemoveAll(sandbox)
	return append(errs, o.checkArchives(ctx, m, sums, sandbox)...)
}

// logf logs progress to o.Log, if set.
func (o CheckOptions) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", args...)
	}
}

// logBumpExample logs where the updater's next patch bump points the first
// platform's download, for a reader to compare with the release.
func (o CheckOptions) logBumpExample(m Manifest) {
	next := nextReleases(m.Version)
	if len(next) == 0 {
		return
	}
	for _, t := range Targets {
		if b, ok := RegistryBump(m, next[0]).Distribution.Binary[t.Platform]; ok {
			o.logf("  e.g. bumped to %s, %s downloads %s", next[0], t.Platform, b.Archive)
			return
		}
	}
}

// checkArchives checks each archive of m that Out holds, and runs the auth
// and launch checks on this machine's: it is an error when there is none.
func (o CheckOptions) checkArchives(ctx context.Context, m Manifest, sums map[string]string, sandbox string) []error {
	var errs []error
	host, hasHost := HostTarget()
	checkedHost := false
	for _, t := range Targets {
		b, ok := m.Distribution.Binary[t.Platform]
		if !ok {
			continue
		}
		l, extracted, aerrs := o.checkArchive(t, b, sums, filepath.Join(sandbox, t.Platform))
		errs = append(errs, aerrs...)
		if extracted && hasHost && t == host {
			checkedHost = true
			errs = append(errs, runChecks(ctx, l, m, filepath.Join(sandbox, t.Platform), o)...)
		}
	}
	if !checkedHost {
		errs = append(errs, fmt.Errorf("no archive for this machine (%s/%s) in %s, so the auth and launch checks did not run", runtime.GOOS, runtime.GOARCH, o.Out))
	}
	return errs
}

// checkArchive checks t's archive in Out against b, its sum in sums,
// extracting it into dir (CheckArchive), and the binary it holds
// (checkBinary). extracted is false when Out has no such archive or it
// could not be extracted.
func (o CheckOptions) checkArchive(t Target, b BinaryTarget, sums map[string]string, dir string) (l Launch, extracted bool, errs []error) {
	archive := filepath.Join(o.Out, path.Base(b.Archive))
	name := filepath.Base(archive)
	if _, err := os.Stat(archive); err != nil {
		o.logf("%s: %s not built here; skipped", t.Platform, name)
		return Launch{}, false, nil
	}
	sum, ok := sums[name]
	if !ok {
		errs = append(errs, fmt.Errorf("%s: not in SHA256SUMS", name))
	}
	b.SHA256 = sum
	l, err := CheckArchive(archive, b, dir)
	if err != nil {
		return Launch{}, false, append(errs, err)
	}
	if _, err := checkBinary(l.Path, t, ""); err != nil {
		errs = append(errs, err)
	}
	o.logf("%s: %s extracts with %s in place", t.Platform, name, b.Cmd)
	return l, true, errs
}

// readSums reads a SHA256SUMS file ("<hex>  <name>" lines) into sums by name.
func readSums(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sums := map[string]string{}
	if len(data) == 0 {
		return sums, nil
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 || strings.ContainsFunc(sum, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) }) || name == "" {
			return nil, fmt.Errorf("%s:%d: not \"<sha256>  <file>\"", path, i+1)
		}
		sums[name] = sum
	}
	return sums, nil
}

// runChecks runs the auth and launch checks on the extracted binary l, and
// checks that its agentInfo names m's id and version.
func runChecks(ctx context.Context, l Launch, m Manifest, sandbox string, o CheckOptions) []error {
	var errs []error
	authTimeout, launchTimeout := o.AuthTimeout, o.LaunchTimeout
	if authTimeout == 0 {
		authTimeout = AuthTimeout
	}
	if launchTimeout == 0 {
		launchTimeout = LaunchTimeout
	}
	res, err := AuthCheck(ctx, l, sandbox, authTimeout)
	if err != nil {
		errs = append(errs, fmt.Errorf("auth check: %w", err))
	} else {
		o.logf("auth check: initialize lists %v", res.Methods)
		if res.AgentName != m.ID {
			errs = append(errs, fmt.Errorf("auth check: agentInfo.name is %q, not the entry's id %q", res.AgentName, m.ID))
		}
		if res.Version != m.Version && !strings.HasPrefix(res.Version, m.Version+"-dev") {
			errs = append(errs, fmt.Errorf("auth check: agentInfo.version is %q, neither the entry's %s nor a -dev build of it", res.Version, m.Version))
		}
	}
	if err := LaunchCheck(ctx, l, launchTimeout); err != nil {
		errs = append(errs, fmt.Errorf("launch check: %w", err))
	} else {
		o.logf("launch check: with stdin closed it kept running or exited 0 within %v", launchTimeout)
	}
	return errs
}
