// Package text cuts strings to a bound without splitting a UTF-8 sequence.
// The callers choose their own mark for a cut ("…", a byte count): only the
// cutting is shared.
package text

import (
	"math"
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

// InertMarkdown makes s, text from outside (a provider's message quoted in
// a status card), show as itself where it is rendered as markdown, as an
// editor renders a tool call's title and content: each line is made inert
// as InertLine makes it (no control character, no indent, one space for a
// run of whitespace), a character that would start inline markup (a link,
// an image, an autolink or HTML, an entity, emphasis, a table's cell) is
// escaped with a backslash, and so is a line's first character where it
// would start a block (a heading, a list, a quote, a rule, a fence). A
// code span closed on its line is kept, being inert: Rebound's own words
// quote commands so (`/retry wait`). Lines stay lines, so a blank line
// still parts paragraphs. A sentence of words and the usual punctuation
// is left as it is: an editor that shows the text plain shows it unchanged.
func InertMarkdown(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = inertMarkdownLine(InertLine(l, math.MaxInt))
	}
	return strings.Join(lines, "\n")
}

func inertMarkdownLine(l string) string {
	var b strings.Builder
	at := blockStart(l)
	prev := ' '
	for i := 0; i < len(l); {
		r, size := utf8.DecodeRuneInString(l[i:])
		if r == '`' && i != at {
			if end := codeSpanEnd(l, i); end > 0 {
				b.WriteString(l[i:end])
				i, prev = end, '`'
				continue
			}
		}
		switch {
		case i == at, strings.ContainsRune("\\`*[]<>&~|", r):
			b.WriteByte('\\')
		case r == '_':
			// Inside a word (rate_limit_exceeded) it is no emphasis.
			next, _ := utf8.DecodeRuneInString(l[i+size:])
			if !isWordRune(prev) || !isWordRune(next) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
		i += size
		prev = r
	}
	return b.String()
}

// codeSpanEnd is the end of the code span whose opening run of backticks
// starts at l[i], 0 if the run is not closed on the line by one as long.
func codeSpanEnd(l string, i int) int {
	n := 0
	for i+n < len(l) && l[i+n] == '`' {
		n++
	}
	for j := i + n; j < len(l); {
		if l[j] != '`' {
			j++
			continue
		}
		k := 0
		for j+k < len(l) && l[j+k] == '`' {
			k++
		}
		if k == n {
			return j + k
		}
		j += k
	}
	return 0
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// blockStart is the index of the character of line l that makes it start
// a block of markdown, -1 if none: a heading's #, a list item's or a
// rule's - or +, a setext heading's underline =, the . or ) after a list
// item's number, a quote's >, a fence's ` or ~.
func blockStart(l string) int {
	if l == "" {
		return -1
	}
	switch l[0] {
	case '#', '-', '+', '=', '>', '`', '~':
		return 0
	}
	n := 0
	for n < len(l) && n < 10 && l[n] >= '0' && l[n] <= '9' {
		n++
	}
	if n > 0 && n < len(l) && (l[n] == '.' || l[n] == ')') {
		return n
	}
	return -1
}
