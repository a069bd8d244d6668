package tools

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// maxLinkHops bounds how many symlinks Resolve follows by hand (dangling
// links), like the kernel's ELOOP limit.
const maxLinkHops = 40

// Workspace is the set of directories the tools may touch: the session's
// working directory plus any additional roots the client named.
//
// Paths are checked after resolving symlinks, but Resolve hands back the path
// as the user knows it (cleaned, absolute, symlinks kept) so that the editor
// shows and opens the same name the user sees in their tree; the check has
// already proved that it leads inside a root.
type Workspace struct {
	cwd   string
	roots []string // as given, cleaned; roots[0] == cwd
	real  []string // roots with symlinks resolved, same order
}

// NewWorkspace returns the workspace rooted at cwd and the additional roots.
// Relative additional roots are taken relative to cwd. Roots are resolved
// once here; a root that does not exist is kept as given.
func NewWorkspace(cwd string, additional ...string) *Workspace {
	cwd = absClean("", cwd)
	w := &Workspace{cwd: cwd}
	for _, r := range append([]string{cwd}, additional...) {
		r = absClean(cwd, r)
		if r == "" {
			continue
		}
		real, err := resolveLenient(r)
		if err != nil {
			real = r
		}
		w.roots = append(w.roots, r)
		w.real = append(w.real, real)
	}
	return w
}

// Cwd returns the session's working directory, cleaned and absolute.
func (w *Workspace) Cwd() string { return w.cwd }

// Roots returns the workspace roots, the working directory first.
func (w *Workspace) Roots() []string { return append([]string(nil), w.roots...) }

// Abs returns path made absolute against the working directory and cleaned,
// without touching the file system and without any confinement check. The
// cleaning is lexical ("a/../b" is "b" whatever a is); that is safe because
// the cleaned path is the one every tool then uses.
func (w *Workspace) Abs(path string) string { return absClean(w.cwd, path) }

// Rel returns path as an editor would show it: relative to the working
// directory when it lies inside it, absolute otherwise.
func (w *Workspace) Rel(path string) string {
	abs := w.Abs(path)
	if abs == w.cwd {
		return "."
	}
	if within(w.cwd, abs) {
		if r, err := filepath.Rel(w.cwd, abs); err == nil {
			return filepath.ToSlash(r)
		}
	}
	return abs
}

// Resolve checks that path (absolute, or relative to the working directory)
// leads inside one of the workspace roots once every symlink on the way is
// followed, and returns it cleaned and absolute, symlinks kept. A path that
// does not exist yet (a file about to be written) is checked through its
// longest existing ancestor; a dangling symlink is checked by its target,
// since writing through it would create the target. Links are followed as
// the kernel follows them (resolveLenient).
func (w *Workspace) Resolve(path string) (string, error) {
	abs, _, err := w.resolve(path)
	return abs, err
}

// Target returns the real location path leads to: every symlink followed
// as the kernel follows them, missing components appended, so it is where a
// write of path would land. It refuses what Resolve refuses. Comparing the
// target when a change is approved with the target when it is written tells
// whether the tree changed in between.
func (w *Workspace) Target(path string) (string, error) {
	_, real, err := w.resolve(path)
	return real, err
}

// LinkTarget returns where path really leads when a symlink on the way
// (below a root; a root's own links do not count) makes it another file
// than its name says, and "" when it is the file its name says. A person
// asked about "notes.txt" must be told when that is a link to src/main.go.
func (w *Workspace) LinkTarget(path string) string {
	abs := w.Abs(path)
	real, err := resolveLenient(abs)
	if err != nil {
		return ""
	}
	for i, r := range w.roots {
		if rel, err := filepath.Rel(r, abs); err == nil && within(r, abs) && filepath.Join(w.real[i], rel) == real {
			return ""
		}
	}
	return real
}

// resolve returns path absolute (symlinks kept) and real, once it is known
// to lead inside a root.
func (w *Workspace) resolve(path string) (abs, real string, err error) {
	if strings.TrimSpace(path) == "" {
		return "", "", fmt.Errorf("path is empty; give a path relative to the workspace (%s) or an absolute one", w.cwd)
	}
	abs = w.Abs(path)
	real, err = resolveLenient(abs)
	if err != nil {
		return "", "", fmt.Errorf("path %q cannot be resolved: %w", path, err)
	}
	if w.realRoot(real) != "" {
		return abs, real, nil
	}
	if real != abs {
		return "", "", fmt.Errorf("path %q leads to %s through a symlink, which is outside the workspace (%s); only files under the workspace roots can be used",
			path, real, strings.Join(w.roots, ", "))
	}
	return "", "", fmt.Errorf("path %q is outside the workspace (%s); only files under the workspace roots can be used",
		path, strings.Join(w.roots, ", "))
}

// realRoot returns the resolved root holding real, a resolved path: the
// shallowest when roots nest, "" when none does.
func (w *Workspace) realRoot(real string) string {
	best := ""
	for _, r := range w.real {
		if within(r, real) && (best == "" || len(r) < len(best)) {
			best = r
		}
	}
	return best
}

// ReadRegularFile reads at most limit bytes of the file at path, confined
// like the tools: path must lead inside the workspace, every link on the
// way included, and be a regular file (never a FIFO or device, which could
// block or never end); truncated says the file has more. It is for files the
// agent reads on its own, such as the project's AGENTS.md, which a cloned
// repository could make a link to a secret outside. A missing file is an
// error satisfying errors.Is(err, fs.ErrNotExist).
func (w *Workspace) ReadRegularFile(path string, limit int64) (data []byte, truncated bool, err error) {
	root, name, err := w.openRoot(path)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	f, _, err := openRegular(root, name)
	if err != nil {
		if nr, ok := errors.AsType[*notRegularError](err); ok {
			return nil, false, fmt.Errorf("%s is %s, not a regular file", path, regfile.Describe(nr.mode))
		}
		return nil, false, err
	}
	defer f.Close()
	limit = max(limit, 0)
	data, err = io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(data)) > limit {
		return data[:limit], true, nil
	}
	return data, false, nil
}

// openRoot resolves path (Resolve's check) and returns an os.Root on the
// resolved workspace root that holds its target, and the target's path in
// that root, free of links when it was resolved.
func (w *Workspace) openRoot(path string) (*os.Root, string, error) {
	if w == nil {
		return nil, "", errors.New("local file access has no workspace to confine it to")
	}
	_, real, err := w.resolve(path)
	if err != nil {
		return nil, "", err
	}
	afterResolve()
	dir := w.realRoot(real)
	name, err := filepath.Rel(dir, real)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", fmt.Errorf("cannot open the workspace root %s: %w", dir, err)
	}
	return root, name, nil
}

// absClean makes p absolute against base and cleans it; "" stays "".
func absClean(base, p string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			if a, err := filepath.Abs(p); err == nil {
				return a
			}
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p)
}

// within reports whether p is root or lies below it. Both must be clean and
// absolute; the separator check keeps /a/bc out of /a/b. On Windows names
// are compared as NTFS does, without case: C:\Proj\x is in c:\proj.
func within(root, p string) bool {
	return withinPath(root, p, filepath.Separator, foldPaths)
}

// withinPath is within for a separator and a case rule given, so that the
// Windows rule is tested on every host.
func withinPath(root, p string, sep byte, fold bool) bool {
	if len(p) < len(root) {
		return false
	}
	if head := p[:len(root)]; head != root && !(fold && strings.EqualFold(head, root)) {
		return false
	}
	return len(p) == len(root) || root[len(root)-1] == sep || p[len(root)] == sep
}

// resolveLenient returns where abs, a clean absolute path, leads once every
// symlink on the way is followed the way the kernel follows them: component
// by component, a link's target spliced in front of the components still to
// come, and ".." taken as the parent of the directory reached so far, after
// its links were followed (filepath.Join of a target and the rest would
// clean "cfg/../x" lexically, as if cfg were not a link). A link to a missing
// file is followed to where it points, as a write through it would create
// the target; from the first missing component on, the rest is appended
// plainly, as the directories a write would create.
func resolveLenient(abs string) (string, error) {
	vol := filepath.VolumeName(abs)
	resolved := vol + string(filepath.Separator)
	rest := splitPath(abs[len(vol):])
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := resolved + c // resolved is clean: it ends in a separator only at the top
		if !os.IsPathSeparator(resolved[len(resolved)-1]) {
			next = resolved + string(filepath.Separator) + c
		}
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			return appendMissing(next, rest)
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink != 0:
			if hops++; hops > maxLinkHops {
				return "", errors.New("too many levels of symbolic links")
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if filepath.IsAbs(target) {
				v := filepath.VolumeName(target)
				resolved, target = v+string(filepath.Separator), target[len(v):]
			}
			rest = append(splitPath(target), rest...)
		case !fi.IsDir() && len(rest) > 0:
			// Nothing can be below a file; the call fails when it gets there.
			return appendMissing(next, rest)
		default:
			resolved = next
		}
	}
	return resolved, nil
}

// appendMissing appends the components rest to p, a path that does not
// exist or is not a directory. A ".." among them has no directory to go up
// from: the kernel refuses such a path, and so does this.
func appendMissing(p string, rest []string) (string, error) {
	for _, c := range rest {
		switch c {
		case ".":
		case "..":
			return "", fmt.Errorf("it goes up (..) from %s, which does not exist or is not a directory", p)
		default:
			p = filepath.Join(p, c)
		}
	}
	return p, nil
}

// splitPath splits p at its separators, dropping empty components.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < utf8.RuneSelf && os.IsPathSeparator(uint8(r)) })
}
