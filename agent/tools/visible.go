package tools

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a person reads before allowing a call must read as what runs. Text
// from the model (a command, a path, an MCP tool's arguments) can hold
// characters that a screen does not show as themselves: control characters
// (a terminal obeys ESC sequences and carriage returns), bidi overrides that
// reorder a line, zero-width and other invisible characters, spaces that are
// not spaces, marks drawn over the character before them, whitespace at the
// end of a line (which decides whether a backslash continues it). Visible
// writes each of them as ⟨U+XXXX⟩, and writes ⟨ itself that way too, so
// that the shown text reads back as exactly one string (Unvisible).

// Visible returns s with every character that could make it read
// differently from what it is written as ⟨U+XXXX⟩, and whether there was
// any. Newlines and tabs inside a line stay as they are.
func Visible(s string) (string, bool) { return visible(s, false) }

// VisibleLine is Visible for text shown on one line, a path or a name:
// newlines, tabs and spaces at either end are written as ⟨U+XXXX⟩ too.
func VisibleLine(s string) (string, bool) { return visible(s, true) }

func visible(s string, oneLine bool) (string, bool) {
	hidden := false
	var b strings.Builder
	b.Grow(len(s))
	prev := rune(-1)
	for i, r := range s {
		if hides(r, prev) || (oneLine && (r == '\n' || r == '\t' || (r == ' ' && atEdge(s, i)))) || ((r == ' ' || r == '\t') && blankToEOL(s[i:])) {
			hidden = true
			fmt.Fprintf(&b, "⟨U+%04X⟩", r)
			prev = '⟩' // a mark after an escape would be drawn over its ⟩
		} else {
			b.WriteRune(r)
			prev = r
		}
	}
	return b.String(), hidden
}

// blankToEOL reports whether s (starting with a space or tab) is blank up
// to a newline or the end: trailing whitespace, which shows as nothing but
// decides whether a backslash before it continues the line. At the very end
// of the text it changes nothing when run, but a code block puts a newline
// after it, where it would be trailing whitespace a screen does not show
// (FuzzPermissionShowsWhatRuns found "\n0 "), so it is written out too.
func blankToEOL(s string) bool {
	rest := strings.TrimLeft(s, " \t")
	return rest == "" || strings.HasPrefix(rest, "\n") || strings.HasPrefix(rest, "\r\n")
}

// atEdge reports whether the space at s[i] is in a run of spaces that
// begins or ends s: "docs " is another directory than "docs", and a code
// span does not show the difference.
func atEdge(s string, i int) bool {
	return strings.TrimLeft(s[i:], " ") == "" || strings.TrimRight(s[:i+1], " ") == ""
}

// hides reports whether r, after prev, would not be seen as itself.
func hides(r, prev rune) bool {
	switch {
	case r == '\n' || r == '\t' || r == ' ':
		return false
	case r == '⟨', r == utf8.RuneError, r == '\u2800': // the escape's own opener; what invalid bytes became; the blank braille cell
		return true
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Noncharacter_Code_Point):
		return true
	case unicode.In(r, unicode.Mn, unicode.Me):
		// A mark drawn over ASCII (a stroke through > or |) changes how
		// shell syntax looks; over letters of scripts that use them it is
		// ordinary text.
		return prev < utf8.RuneSelf || prev == '⟩'
	}
	// Unassigned in the Unicode version Go knows: no font draws it.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// Unvisible reverses Visible and VisibleLine: every ⟨U+XXXX⟩ back to its
// character. Visible text holds no ⟨ but in these escapes, so the shown
// text stands for exactly one string.
func Unvisible(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "⟨U+")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len("⟨U+"):]
		j := strings.Index(s, "⟩")
		if j < 0 {
			b.WriteString("⟨U+" + s)
			return b.String()
		}
		n, err := strconv.ParseUint(s[:j], 16, 32)
		if err != nil {
			b.WriteString("⟨U+" + s[:j+len("⟩")])
		} else {
			b.WriteRune(rune(n))
		}
		s = s[j+len("⟩"):]
	}
}

// CodeBlock fences s as a Markdown code block whose fence no run of
// backticks inside s can close. Trailing newlines are left out (they change
// nothing in a command or a document shown whole).
func CodeBlock(lang, s string) string {
	f := "```"
	for strings.Contains(s, f) {
		f += "`"
	}
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}
