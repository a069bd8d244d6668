package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
		real, err := filepath.EvalSymlinks(r)
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
// without touching the file system and without any confinement check.
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
// since writing through it would create the target.
func (w *Workspace) Resolve(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", fmt.Errorf("path is empty; give a path relative to the workspace (%s) or an absolute one", w.cwd)
	}
	abs := w.Abs(path)
	real, err := resolveLenient(abs)
	if err != nil {
		return "", fmt.Errorf("path %q cannot be resolved: %w", path, err)
	}
	for _, r := range w.real {
		if within(r, real) {
			return abs, nil
		}
	}
	if real != abs {
		return "", fmt.Errorf("path %q leads to %s through a symlink, which is outside the workspace (%s); only files under the workspace roots can be used",
			path, real, strings.Join(w.roots, ", "))
	}
	return "", fmt.Errorf("path %q is outside the workspace (%s); only files under the workspace roots can be used",
		path, strings.Join(w.roots, ", "))
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
// absolute; the separator check keeps /a/bc out of /a/b.
func within(root, p string) bool {
	if p == root {
		return true
	}
	if !strings.HasSuffix(root, string(filepath.Separator)) {
		root += string(filepath.Separator)
	}
	return strings.HasPrefix(p, root)
}

// resolveLenient follows every symlink in abs, like filepath.EvalSymlinks,
// but also for paths that do not exist: the missing tail is appended to the
// resolved longest existing ancestor, and a dangling symlink is replaced by
// its target.
func resolveLenient(abs string) (string, error) {
	for hops := 0; ; hops++ {
		if hops > maxLinkHops {
			return "", errors.New("too many levels of symbolic links")
		}
		p, tail := abs, ""
		for {
			real, err := filepath.EvalSymlinks(p)
			if err == nil {
				return filepath.Join(real, tail), nil
			}
			if fi, lerr := os.Lstat(p); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
				// p exists but cannot be followed: a dangling link (or
				// a loop, which the hop bound ends). Continue from its
				// target.
				target, err := os.Readlink(p)
				if err != nil {
					return "", err
				}
				if !filepath.IsAbs(target) {
					target = filepath.Join(filepath.Dir(p), target)
				}
				abs = filepath.Join(target, tail)
				break
			}
			parent := filepath.Dir(p)
			if parent == p {
				return filepath.Join(p, tail), nil
			}
			tail = filepath.Join(filepath.Base(p), tail)
			p = parent
		}
	}
}
