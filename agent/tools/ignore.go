package tools

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// This file matches paths against .gitignore patterns as gitignore(5)
// describes them, so that find_files and search_files skip what `git status`
// skips. It replaces go-git's gitignore package, whose import brought go-git's
// config parser, encoding/gob and os/user into the binary and cost every
// start of Rebound about 0.15 ms of package initialisation.
//
// What is implemented (each point is pinned by ignore_test.go, and checked
// against `git check-ignore` there when git is installed):
//
//   - blank lines and lines starting with "#" are skipped; "\#" and "\!"
//     stand for a leading "#" or "!"; trailing spaces are dropped unless
//     escaped with a backslash; a UTF-8 byte order mark and a CR before the
//     newline are dropped, as git does;
//   - "!" re-includes what an earlier pattern excluded; the last pattern
//     that matches decides, and the patterns of a deeper .gitignore come
//     after those of the files above it (and .git/info/exclude first of all);
//   - a trailing "/" makes a pattern match directories only;
//   - a pattern with no other "/" matches a name at any depth below its
//     file's directory; one with a "/" at the start or in the middle is
//     matched against the whole path relative to that directory;
//   - "*" matches any run of characters except "/", "?" any one character
//     except "/", "[...]" one character of a class (ranges, "!" or "^" to
//     negate, "\" escapes, and the POSIX classes such as [:alpha:]); "\"
//     escapes any character;
//   - "**/" at the start matches in every directory, "/**" at the end matches
//     everything inside, "/**/" matches zero or more directories; any other
//     run of stars is one "*", except where git itself departs from its
//     manual: in a pattern with a slash whose first wildcard is a "**" right
//     after a literal start, followed by "/" or the end ("/ab**", "b**/x"),
//     that "**" also crosses slashes (git compares the literal start on its
//     own and matches the rest as a new pattern);
//   - what is inside an excluded directory is excluded too and cannot be
//     re-included: the walk never enters an excluded directory, and
//     ignoredPath checks a path's parents.
//
// Like git, it compares bytes, so "?" matches one byte of a multi-byte
// character; matching is case-sensitive (core.ignoreCase is not read, nor
// core.excludesFile).

// ignoreRule is one pattern of a .gitignore-style file.
type ignoreRule struct {
	// base is the directory of the file the rule comes from, slash-separated
	// and relative to the repository's top, with a trailing slash ("" for
	// the top). The rule applies only to paths below it.
	base    string
	negate  bool // "!": a match re-includes
	dirOnly bool // trailing "/": only directories match
	// name is the pattern of a rule without a slash, matched against the
	// last component of a path; segs, for the others, is the pattern split
	// at its slashes, matched against the path below base.
	name    string
	segs    []string
	literal bool // name has no wildcard or escape: a plain comparison
	never   bool // a malformed class: git's matcher gives up on it, so it matches nothing
	// lead, when not "", is the literal start of a slashed pattern whose
	// first wildcard is a "**" in the middle of a component followed by "/"
	// or the end ("/ab**", "b**/x"). git compares such a start as text and
	// matches the rest on its own, so that "**" then matches anything,
	// slashes included, as if it began the pattern: segs is the part after
	// the "**/" (nil after a final "**").
	lead string
}

// parseIgnoreLine makes the rule of one line of a .gitignore-style file
// whose directory, relative to the repository's top, is base ("" or ending
// in "/"). ok is false for a line that holds no pattern (blank or comment).
func parseIgnoreLine(line, base string) (r ignoreRule, ok bool) {
	if strings.HasPrefix(line, "#") {
		return r, false
	}
	line = trimTrailingSpaces(line)
	r.base = base
	if strings.HasPrefix(line, "!") {
		r.negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return r, false
	}
	if !strings.Contains(line, "/") {
		r.name = line
		r.literal = !strings.ContainsAny(line, `*?[\`)
		r.never = !classesWellFormed(line)
		return r, true
	}
	line = strings.TrimPrefix(line, "/")
	r.never = !classesWellFormed(line)
	if i := strings.IndexAny(line, `*?[\`); i > 0 && line[i-1] != '/' && strings.HasPrefix(line[i:], "**") {
		rest := strings.TrimLeft(line[i:], "*")
		if rest == "" || rest[0] == '/' {
			r.lead = line[:i]
			if rest != "" {
				line = rest[1:]
			} else {
				return r, true
			}
		}
	}
	r.segs = splitIgnorePattern(line)
	for i, s := range r.segs {
		if len(s) >= 2 && strings.Trim(s, "*") == "" {
			r.segs[i] = "**" // any run of two or more stars between slashes
		}
	}
	return r, true
}

// trimTrailingSpaces drops the spaces at the end of line that are not
// escaped by a backslash (tabs stay, as in git).
func trimTrailingSpaces(line string) string {
	end := 0 // just past the last byte to keep
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
		case '\\':
			if i+1 < len(line) {
				i++ // the escaped byte, a space included, is kept
			}
			end = i + 1
		default:
			end = i + 1
		}
	}
	return line[:end]
}

// splitIgnorePattern splits a pattern at its slashes: not at one inside a
// bracket class (which can never match, as a class never matches "/"), and at
// an escaped one ("\/" matches "/" like "/" does).
func splitIgnorePattern(p string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 < len(p) && p[i+1] == '/' {
				segs = append(segs, p[start:i])
				start = i + 2
			}
			i++
		case '[':
			if n, ok := classEnd(p[i+1:]); ok {
				i += n
			}
		case '/':
			segs = append(segs, p[start:i])
			start = i + 1
		}
	}
	return append(segs, p[start:])
}

// match reports whether the rule matches path, which is slash-separated and
// relative to the repository's top; isDir says path is a directory.
func (r *ignoreRule) match(path string, isDir bool) bool {
	if r.never || (r.dirOnly && !isDir) {
		return false
	}
	if r.base != "" {
		if !strings.HasPrefix(path, r.base) {
			return false
		}
		path = path[len(r.base):]
	}
	if path == "" {
		return false
	}
	if r.lead != "" {
		rest, ok := strings.CutPrefix(path, r.lead)
		if !ok {
			return false
		}
		return r.segs == nil || matchAtAnyDepth(r.segs, rest)
	}
	if r.segs == nil {
		name := path[strings.LastIndexByte(path, '/')+1:]
		if r.literal {
			return name == r.name
		}
		return matchName(r.name, name)
	}
	return matchSegments(r.segs, path)
}

// matchSegments matches pattern segments against the components of path. A
// "**" segment matches zero or more whole components; last, it matches all
// that is left.
func matchSegments(segs []string, path string) bool {
	for i, seg := range segs {
		if seg == "**" {
			rest := segs[i+1:]
			return len(rest) == 0 || matchAtAnyDepth(rest, path)
		}
		comp, tail, more := strings.Cut(path, "/")
		if !matchName(seg, comp) {
			return false
		}
		last := i == len(segs)-1
		if last || !more {
			return last && !more
		}
		path = tail
	}
	return false // not reached: segs is never empty
}

// matchAtAnyDepth reports whether segs match path from its start or from
// any component after its first.
func matchAtAnyDepth(segs []string, path string) bool {
	for {
		if matchSegments(segs, path) {
			return true
		}
		slash := strings.IndexByte(path, '/')
		if slash < 0 {
			return false
		}
		path = path[slash+1:]
	}
}

// matchName matches one path component (no "/") against a pattern without
// slashes: "*" (any run of stars) matches any run of bytes, "?" one byte,
// "[...]" one byte of a class, "\c" the byte c. It backtracks only to the
// last star, which suffices because a star here matches any bytes.
func matchName(p, s string) bool {
	pi, si := 0, 0
	star, starS := -1, 0 // where the last star's match started, in p and s
	for pi < len(p) || si < len(s) {
		if pi < len(p) && p[pi] == '*' {
			for pi < len(p) && p[pi] == '*' {
				pi++
			}
			star, starS = pi, si
			continue
		}
		if n := matchByte(p[pi:], s[si:]); n > 0 {
			pi += n
			si++
			continue
		}
		if star < 0 || starS >= len(s) {
			return false
		}
		starS++ // the star takes one more byte; try the rest again
		pi, si = star, starS
	}
	return true
}

// matchByte matches the first element of pattern p (not a star) against the
// first byte of s: it returns how many bytes of p the element takes, or 0
// when it does not match or either is empty. An unclosed class and a
// trailing backslash never match.
func matchByte(p, s string) int {
	if p == "" || s == "" {
		return 0
	}
	switch p[0] {
	case '?':
		return 1
	case '[':
		if n, ok := classEnd(p[1:]); ok && classMatches(p[1:n], s[0]) {
			return 1 + n
		}
	case '\\':
		if len(p) > 1 && p[1] == s[0] {
			return 2
		}
	default:
		if p[0] == s[0] {
			return 1
		}
	}
	return 0
}

// posixClass reports whether c is in the [:name:] class of a bracket
// expression; known is false for a name that is not a class.
func posixClass(name string, c byte) (in, known bool) {
	alpha := ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	digit := '0' <= c && c <= '9'
	switch name {
	case "alnum":
		return alpha || digit, true
	case "alpha":
		return alpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return digit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return 'a' <= c && c <= 'z', true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !alpha && !digit, true
	case "space":
		return c == ' ' || ('\t' <= c && c <= '\r'), true
	case "upper":
		return 'A' <= c && c <= 'Z', true
	case "xdigit":
		return digit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}

// classEnd returns how far past the "[" that opens a bracket class, given
// the text after it, the closing "]" is: the class is p[:n-1]. ok is false
// for a class that is not closed or names an unknown [:class:].
func classEnd(p string) (n int, ok bool) {
	i := 0
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		i++
	}
	for first := true; ; first = false {
		if i >= len(p) {
			return 0, false
		}
		switch {
		case p[i] == ']' && !first:
			return i + 1, true
		case p[i] == '\\':
			if i+1 >= len(p) {
				return 0, false
			}
			i += 2
		case strings.HasPrefix(p[i:], "[:"):
			n, ok := namedClassLen(p[i:])
			if !ok {
				return 0, false
			}
			i += max(n, 1) // no ":]": the "[" is an ordinary member
		default:
			i++
		}
	}
}

// namedClassLen is the length of the [:name:] that p starts with ("[:" is
// checked), or 0 when what follows "[:" is no class, only members. ok is
// false for one not closed or of an unknown name.
func namedClassLen(p string) (n int, ok bool) {
	name, _, found := strings.Cut(p[2:], "]")
	if !found {
		return 0, false
	}
	class, isClass := strings.CutSuffix(name, ":")
	if !isClass {
		return 0, true
	}
	if _, known := posixClass(class, 0); !known {
		return 0, false
	}
	return 2 + len(name) + 1, true
}

// classMatches reports whether c is in the bracket class body (the text
// between "[" and its "]", which classEnd has checked).
func classMatches(body string, c byte) bool {
	negated := body != "" && (body[0] == '!' || body[0] == '^')
	if negated {
		body = body[1:]
	}
	in := false
	// prev is the last single member, the start of a possible range; -1
	// after a range or a [:class:], after which "-" is an ordinary member.
	prev := -1
	for i := 0; i < len(body); i++ {
		if body[i] == '-' && prev >= 0 && i+1 < len(body) {
			hi, last := classByte(body, i+1)
			in = in || (byte(prev) <= c && c <= hi)
			i, prev = last, -1
			continue
		}
		if n, member, isClass := namedClassAt(body[i:], c); isClass {
			in = in || member
			i, prev = i+n-1, -1
			continue
		}
		m, last := classByte(body, i)
		in = in || m == c
		i, prev = last, int(m)
	}
	return in != negated
}

// classByte is the single member of a class body at i, escaped by a
// backslash or not, and the index of its last byte.
func classByte(body string, i int) (b byte, last int) {
	if body[i] == '\\' {
		i++
	}
	return body[i], i
}

// namedClassAt reads the [:name:] that s starts with, if it does: its
// length n and whether c is a member.
func namedClassAt(s string, c byte) (n int, member, isClass bool) {
	if !strings.HasPrefix(s, "[:") {
		return 0, false, false
	}
	name, _, _ := strings.Cut(s[2:], "]")
	class, isClass := strings.CutSuffix(name, ":")
	if !isClass {
		return 0, false, false
	}
	member, _ = posixClass(class, c)
	return 2 + len(name) + 1, member, true
}

// classesWellFormed reports whether every bracket class in p is closed and
// names only known [:classes:]. git's matcher gives up on a pattern when it
// reaches one that is not, so such a pattern can match nothing.
func classesWellFormed(p string) bool {
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '[':
			n, ok := classEnd(p[i+1:])
			if !ok {
				return false
			}
			i += n
		}
	}
	return true
}

// ignored reports whether the last rule matching path (relative to the
// repository's top) excludes it. Only path itself is matched: a walk that
// never enters an excluded directory need not check the parents.
func ignored(rules []ignoreRule, path string, isDir bool) bool {
	for i := len(rules) - 1; i >= 0; i-- {
		if rules[i].match(path, isDir) {
			return !rules[i].negate
		}
	}
	return false
}

// ignoredPath reports whether path, or a directory it is in, is excluded by
// rules, as `git check-ignore` would say: nothing in an excluded directory
// can be re-included.
func ignoredPath(rules []ignoreRule, path string, isDir bool) bool {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && ignored(rules, path[:i], true) {
			return true
		}
	}
	return ignored(rules, path, isDir)
}

// readIgnoreFile parses the .gitignore-style file name in root, whose
// patterns apply below base (as for parseIgnoreLine). A missing or unreadable
// file has no rules; so has one that is not a regular file: a symlink, as
// git (2.32 on) does not follow one for .gitignore, and a FIFO or a device,
// which could block the walk or never end (.gitignore -> /dev/stdin would
// read the agent's own ACP input).
func readIgnoreFile(root *os.Root, name, base string) []ignoreRule {
	f, _, err := openRegular(root, name)
	if err != nil {
		return nil
	}
	defer f.Close()
	return parseIgnoreFile(io.LimitReader(f, maxIgnoreFileBytes), base)
}

// parseIgnoreFile parses the lines of a .gitignore-style file.
func parseIgnoreFile(r io.Reader, base string) []ignoreRule {
	var rules []ignoreRule
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if first {
			line = strings.TrimPrefix(line, "\uFEFF")
		}
		if rule, ok := parseIgnoreLine(line, base); ok {
			rules = append(rules, rule)
		}
	}
	return rules
}
