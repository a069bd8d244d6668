package tools

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// matchNameBefore is matchName as it was before its per-byte step was
// named, kept while the refactor is checked against it.
func matchNameBefore(p, s string) bool {
	pi, si := 0, 0
	star, starS := -1, 0
	for pi < len(p) || si < len(s) {
		if pi < len(p) {
			switch c := p[pi]; c {
			case '*':
				for pi < len(p) && p[pi] == '*' {
					pi++
				}
				star, starS = pi, si
				continue
			case '?':
				if si < len(s) {
					pi++
					si++
					continue
				}
			case '[':
				if si < len(s) {
					if n, ok := classEnd(p[pi+1:]); ok && classMatches(p[pi+1:pi+n], s[si]) {
						pi += 1 + n
						si++
						continue
					}
				}
			case '\\':
				if pi+1 < len(p) && si < len(s) && p[pi+1] == s[si] {
					pi += 2
					si++
					continue
				}
			default:
				if si < len(s) && c == s[si] {
					pi++
					si++
					continue
				}
			}
		}
		if star < 0 || starS >= len(s) {
			return false
		}
		starS++
		pi, si = star, starS
	}
	return true
}

// matchName answers as it did before its refactor for generated patterns
// (stars, "?", classes with ranges, negation, escapes and [:classes:],
// unclosed ones, trailing backslashes) and names.
func TestMatchName_SameAsBefore(t *testing.T) {
	pat := []string{"a", "b", "*", "**", "?", "[", "]", "!", "^", "-", "\\", "[:alpha:]", "[:digit:]", "[:nope:]", "[a-c]", "[!b]", "1", "."}
	name := []string{"a", "b", "c", "1", "-", "]", "[", "\\", "*", "?", "!", ".", "B"}
	r := rand.New(rand.NewPCG(30, 2))
	gen := func(from []string, n int) string {
		var b strings.Builder
		for range r.IntN(n) {
			b.WriteString(from[r.IntN(len(from))])
		}
		return b.String()
	}
	for range 200000 {
		p, s := gen(pat, 8), gen(name, 8)
		if got, want := matchName(p, s), matchNameBefore(p, s); got != want {
			t.Fatalf("matchName(%q, %q) = %v, before %v", p, s, got, want)
		}
	}
}

// matchSegmentsBefore is matchSegments before its "**" loop was named.
func matchSegmentsBefore(segs []string, path string) bool {
	for i, seg := range segs {
		if seg == "**" {
			rest := segs[i+1:]
			if len(rest) == 0 {
				return true
			}
			for {
				if matchSegmentsBefore(rest, path) {
					return true
				}
				slash := strings.IndexByte(path, '/')
				if slash < 0 {
					return false
				}
				path = path[slash+1:]
			}
		}
		comp, tail, more := strings.Cut(path, "/")
		if !matchNameBefore(seg, comp) {
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

// matchSegments answers as it did before its refactor for generated
// segment lists ("**" anywhere, repeated) and paths.
func TestMatchSegments_SameAsBefore(t *testing.T) {
	seg := []string{"a", "b", "*", "**", "a*", "?", "[ab]"}
	comp := []string{"a", "b", "ab", "c", ""}
	r := rand.New(rand.NewPCG(30, 3))
	for range 100000 {
		segs := make([]string, 1+r.IntN(5))
		for i := range segs {
			segs[i] = seg[r.IntN(len(seg))]
		}
		path := make([]string, 1+r.IntN(6))
		for i := range path {
			path[i] = comp[r.IntN(len(comp))]
		}
		p := strings.Join(path, "/")
		if got, want := matchSegments(segs, p), matchSegmentsBefore(segs, p); got != want {
			t.Fatalf("matchSegments(%q, %q) = %v, before %v", segs, p, got, want)
		}
	}
}
