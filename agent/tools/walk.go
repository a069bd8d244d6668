package tools

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/rebound-agent/rebound/internal/regfile"
)

// Defaults and bounds for find_files and search_files.
const (
	DefaultFindLimit   = 200
	DefaultSearchLimit = 100
	// MaxSearchFileBytes: larger files are skipped by Search (generated
	// code, data, logs), which keeps one search bounded.
	MaxSearchFileBytes = 2 << 20
	// MaxMatchLineBytes is where a matching line is cut in search results.
	MaxMatchLineBytes = 300
	// maxIgnoreFileBytes bounds how much of one .gitignore is read.
	maxIgnoreFileBytes = 1 << 20
)

// Match is one line found by Search.
type Match struct {
	Path string // absolute
	Line int    // 1-based
	Text string // the line without its newline, cut if very long
}

// errStop ends a walk early without being an error.
var errStop = errors.New("stop walking")

// Find returns the files under root whose path relative to root matches
// glob, sorted, at most limit of them (DefaultFindLimit if limit <= 0);
// truncated says that there were more. A glob without a slash matches the
// base name at any depth, so "*.go" finds every Go file. The .git directory,
// files ignored by .gitignore and symlinks that lead out of root are skipped;
// symlinked directories are not followed. The paths are absolute, under
// root as given.
func Find(ctx context.Context, root, glob string, limit int) (paths []string, truncated bool, err error) {
	if limit <= 0 {
		limit = DefaultFindLimit
	}
	match, err := globMatcher(glob)
	if err != nil {
		return nil, false, err
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, false, describeOpenErr(root, err, "")
	}
	if !fi.IsDir() {
		return nil, false, fmt.Errorf("%s is not a directory; find_files searches directories", root)
	}
	err = walkFiles(ctx, root, func(f walkedFile) error {
		if !match(f.rel) {
			return nil
		}
		if len(paths) == limit {
			truncated = true
			return errStop
		}
		paths = append(paths, f.path)
		return nil
	})
	return paths, truncated, err
}

// Search returns the lines matching re in the files under root (or in root
// itself when it is a file), limited to files whose relative path matches
// glob when glob is not empty. Results are sorted by path and line, at most
// limit of them (DefaultSearchLimit if limit <= 0); truncated says there were
// more. Binary files, files over MaxSearchFileBytes and files that are not
// regular (a FIFO would block the search) are skipped, and the walk skips
// what Find skips.
func Search(ctx context.Context, root string, re *regexp.Regexp, glob string, limit int) (matches []Match, truncated bool, err error) {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	match := func(string) bool { return true }
	if glob != "" {
		if match, err = globMatcher(glob); err != nil {
			return nil, false, err
		}
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, false, describeOpenErr(root, err, "")
	}
	visit := func(f walkedFile) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ms, more, err := searchFile(f, re, limit-len(matches))
		if err != nil {
			return nil // unreadable files are skipped, like binary ones
		}
		matches = append(matches, ms...)
		if more {
			truncated = true
			return errStop
		}
		return nil
	}
	switch {
	case fi.IsDir():
		err = walkFiles(ctx, root, func(f walkedFile) error {
			if !match(f.rel) {
				return nil
			}
			return visit(f)
		})
	case !fi.Mode().IsRegular():
		return nil, false, fmt.Errorf("%s is %s, not a regular file; search_files searches directories and regular files", root, regfile.Describe(fi.Mode()))
	default:
		err = searchOne(root, visit)
	}
	if errors.Is(err, errStop) {
		err = nil
	}
	return matches, truncated, err
}

// searchOne visits the single file path, through a root on its resolved
// directory so that the open cannot follow a link swapped in meanwhile.
func searchOne(path string, visit func(walkedFile) error) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return describeOpenErr(path, err, "")
	}
	root, err := os.OpenRoot(filepath.Dir(real))
	if err != nil {
		return err
	}
	defer root.Close()
	return visit(walkedFile{path: path, rel: filepath.Base(path), root: root, name: filepath.Base(real)})
}

// searchFile returns up to room matches of re in the file; more reports that
// the file has further matches. Binary, oversized and non-regular files give
// none.
func searchFile(wf walkedFile, re *regexp.Regexp, room int) (ms []Match, more bool, err error) {
	path := wf.path
	f, fi, err := openRegular(wf.root, wf.name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi.Size() > MaxSearchFileBytes {
		return nil, false, nil
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSearchFileBytes+1))
	if err != nil || len(b) > MaxSearchFileBytes || IsBinary(b) {
		return nil, false, err
	}
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		loc := re.FindIndex(line)
		if loc == nil {
			continue
		}
		if len(ms) == room {
			return ms, true, nil
		}
		ms = append(ms, Match{Path: path, Line: n, Text: cutMatchLine(string(line), loc[0])})
	}
	return ms, false, nil
}

// cutMatchLine trims a line's trailing CR and shortens it to about
// MaxMatchLineBytes around the match starting at byte at, so that a match
// deep inside a minified line stays visible.
func cutMatchLine(line string, at int) string {
	line = strings.TrimSuffix(line, "\r")
	if len(line) <= MaxMatchLineBytes {
		return line
	}
	start := max(0, at-MaxMatchLineBytes/3)
	for start > 0 && start < len(line) && !isRuneStart(line[start]) {
		start--
	}
	end := min(len(line), start+MaxMatchLineBytes)
	for end < len(line) && !isRuneStart(line[end]) {
		end--
	}
	s := line[start:end]
	if start > 0 {
		s = "…" + s
	}
	if end < len(line) {
		s += "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// globMatcher returns a function matching slash-separated paths relative to
// the walk root. A glob without a slash is matched against the base name.
func globMatcher(glob string) (func(rel string) bool, error) {
	glob = strings.TrimPrefix(filepath.ToSlash(glob), "./")
	if glob == "" {
		return nil, errors.New(`the glob is empty; use "**" or "*" to match every file`)
	}
	if !doublestar.ValidatePattern(glob) {
		return nil, fmt.Errorf("glob %q is not valid; check its brackets and braces", glob)
	}
	if !strings.Contains(glob, "/") {
		return func(rel string) bool {
			ok, _ := doublestar.Match(glob, rel[strings.LastIndexByte(rel, '/')+1:])
			return ok
		}, nil
	}
	return func(rel string) bool {
		ok, _ := doublestar.Match(glob, rel)
		return ok
	}, nil
}

// walkedFile is a file a walk found.
type walkedFile struct {
	path string // absolute, under the walk's root as given
	rel  string // slash-separated, relative to that root
	// root and name are how to open it: the file, or a link's target, as
	// a link-free path in a root on the walk's resolved root.
	root *os.Root
	name string
}

// walkFiles calls fn for every file under root that a search should see, in
// the lexical order of their relative paths. It skips .git, paths ignored by
// .gitignore files (root's, nested ones, and those of the enclosing
// repository above root), non-regular files and symlinks that lead out of
// root or to a directory. It lists directories and reads .gitignore files
// through an os.Root on root, so that a directory swapped for a link during
// the walk cannot take it outside. fn may return errStop to end the walk.
func walkFiles(ctx context.Context, root string, fn func(walkedFile) error) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return describeOpenErr(root, err, "")
	}
	r, err := os.OpenRoot(realRoot)
	if err != nil {
		return describeOpenErr(root, err, "")
	}
	defer r.Close()
	prefix, rules := repoPatterns(realRoot)
	w := &walker{ctx: ctx, root: r, realRoot: realRoot, prefix: prefix, fn: fn}
	err = w.dir(root, "", rules)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

type walker struct {
	ctx      context.Context
	root     *os.Root // on realRoot
	realRoot string
	prefix   string // root's slash-separated path inside its repository, "" at its top
	fn       func(walkedFile) error
}

// dir walks the directory at dir, rel from the root, under the ignore rules
// of the directories above it (ignore.go).
func (w *walker) dir(dir, rel string, rules []ignoreRule) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	name := filepath.FromSlash(cmp.Or(rel, "."))
	entries, err := readDir(w.root, name)
	if err != nil {
		if rel == "" {
			return describeOpenErr(dir, err, "")
		}
		return nil // an unreadable subdirectory is skipped
	}
	base := w.rulesBase(rel)
	// Full slice expression: siblings must not share appended rules.
	rules = append(rules[:len(rules):len(rules)], readIgnoreFile(w.root, filepath.Join(name, ".gitignore"), base)...)
	sortForWalk(entries)
	for _, e := range entries {
		if err := w.entry(dir, rel, base, rules, e); err != nil {
			return err
		}
	}
	return nil
}

// rulesBase is the path inside the repository of the directory at rel,
// with a trailing slash ("" at the repository's top): the base of its
// .gitignore's rules.
func (w *walker) rulesBase(rel string) string {
	switch {
	case w.prefix != "" && rel != "":
		return w.prefix + "/" + rel + "/"
	case w.prefix != "" || rel != "":
		return w.prefix + rel + "/"
	}
	return ""
}

// sortForWalk sorts a directory's entries by name, with "/" after directory
// names, so that the walk visits paths in the lexical order of their full
// relative paths ("a.go" before "a/b.go") and the first limit results are
// the sorted first.
func sortForWalk(entries []fs.DirEntry) {
	key := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return cmp.Compare(key(a), key(b)) })
}

// entry walks one entry of the directory at dir (rel from the root): into
// a subdirectory, or to fn with a regular file or a link to one inside the
// root. .git, ignored paths and anything else are passed over.
func (w *walker) entry(dir, rel, base string, rules []ignoreRule, e fs.DirEntry) error {
	name := e.Name()
	if name == ".git" || ignored(rules, base+name, e.IsDir()) {
		return nil
	}
	path, childRel := filepath.Join(dir, name), name
	if rel != "" {
		childRel = rel + "/" + name
	}
	if e.IsDir() {
		return w.dir(path, childRel, rules)
	}
	open, ok := w.openName(e, path, childRel)
	if !ok {
		return nil
	}
	return w.fn(walkedFile{path: path, rel: childRel, root: w.root, name: open})
}

// openName is the name in the walk's root by which the file at path (rel
// from the root) is opened: its own, or for a link the target's, when that
// is a file inside the root. ok is false for anything else.
func (w *walker) openName(e fs.DirEntry, path, rel string) (name string, ok bool) {
	switch t := e.Type(); {
	case t&fs.ModeSymlink != 0:
		return w.linkToFileInside(path)
	case !t.IsRegular():
		return "", false
	}
	return filepath.FromSlash(rel), true
}

// readDir lists the directory name in root. The open does not block, in
// case the directory was swapped for a FIFO since it was listed.
func readDir(root *os.Root, name string) ([]fs.DirEntry, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// linkToFileInside returns the path in the walk's root of the regular file
// the symlink at path leads to, if it leads to one inside that root. Links to
// directories are not followed (that could loop, or double the tree); links
// out of the tree would let a search read outside the workspace.
func (w *walker) linkToFileInside(path string) (string, bool) {
	real, err := resolveLenient(path)
	if err != nil || !within(w.realRoot, real) {
		return "", false
	}
	fi, err := os.Stat(real) // a stat, unlike an open, never blocks
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	rel, err := filepath.Rel(w.realRoot, real)
	return rel, err == nil
}

// repoPatterns finds the git repository enclosing root (the nearest
// directory at or above it holding .git) and returns root's slash-separated
// path relative to that top, with the rules of .git/info/exclude and of the
// .gitignore files from the top down to root's parent. Root's own .gitignore
// is read by the walk. When root is itself ignored by those rules (or is in
// an ignored directory), the caller asked for it explicitly, so they are
// dropped, as ripgrep does for a path named on its command line.
func repoPatterns(root string) (prefix string, rules []ignoreRule) {
	top := root
	for {
		if _, err := os.Lstat(filepath.Join(top, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(top)
		if parent == top {
			return "", nil // not in a repository: only root and below count
		}
		top = parent
	}
	r, err := os.OpenRoot(top)
	if err != nil {
		return "", nil
	}
	defer r.Close()
	rules = readIgnoreFile(r, filepath.Join(".git", "info", "exclude"), "")
	if top == root {
		return "", rules
	}
	rel, err := filepath.Rel(top, root)
	if err != nil {
		return "", nil
	}
	prefix = filepath.ToSlash(rel)
	dir, base := ".", ""
	for _, c := range strings.Split(prefix, "/") {
		rules = append(rules, readIgnoreFile(r, filepath.Join(dir, ".gitignore"), base)...)
		dir, base = filepath.Join(dir, c), base+c+"/"
	}
	if ignoredPath(rules, prefix, true) {
		return prefix, nil
	}
	return prefix, rules
}

// FormatFind returns the text find_files hands the model: one path per line,
// relative to the working directory when inside it, and a note when the
// list was capped.
func FormatFind(ws *Workspace, paths []string, truncated bool) string {
	if len(paths) == 0 {
		return "No files found."
	}
	var b strings.Builder
	for _, p := range paths {
		b.WriteString(ws.Rel(p))
		b.WriteByte('\n')
	}
	if truncated {
		fmt.Fprintf(&b, "[showing the first %d files; there are more, so narrow the glob or the path]\n", len(paths))
	}
	return b.String()
}

// FormatSearch returns the text search_files hands the model: one
// "path:line: text" per match, paths relative to the working directory when
// inside it, and a note when the results were capped.
func FormatSearch(ws *Workspace, matches []Match, truncated bool) string {
	if len(matches) == 0 {
		return "No matches found."
	}
	var b strings.Builder
	for _, m := range matches {
		fmt.Fprintf(&b, "%s:%d: %s\n", ws.Rel(m.Path), m.Line, m.Text)
	}
	if truncated {
		fmt.Fprintf(&b, "[showing the first %d matches; there are more, so narrow the pattern, the path or the glob]\n", len(matches))
	}
	return b.String()
}
