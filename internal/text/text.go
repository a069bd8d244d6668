// Package text cuts strings to a bound without splitting a UTF-8 sequence.
// The callers choose their own mark for a cut ("…", a byte count): only the
// cutting is shared.
package text

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Floor is the largest index at or before i where a rune starts in s, so
// that s[:Floor(s, i)] never ends inside a rune. An i at or past the end of s
// is returned as it is.
func Floor(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// Prefix cuts s to at most n bytes without splitting a rune.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:Floor(s, n)]
}

// ClipChars keeps at most n characters (runes) of s, the last of them "…"
// where s was cut. n must be at least 1.
func ClipChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// EditDistance is the Levenshtein distance of a and b, in characters
// (runes): for "did you mean" hints. It takes len(a)·len(b) steps, so
// callers bound what they pass.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// InertLine makes s, text from outside (a provider's error, a file), inert
// on a terminal and one line long: runs of whitespace are one space, and
// any other control or format character (an escape sequence's ESC, a
// bidi override) is written as an escape, \x1b, so it does nothing. It is
// cut to n characters (n at least 1).
func InertLine(s string, n int) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case space && b.Len() > 0:
			b.WriteByte(' ')
		}
		space = false
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return ClipChars(b.String(), n)
}
