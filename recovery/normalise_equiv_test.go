package recovery

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// normaliseBefore is normalise as it was before it was split into named
// steps, kept while the refactor is checked against it.
func normaliseBefore(s string) string {
	if len(s) > maxWordsText {
		s = s[:maxWordsText]
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteByte(' ')
	space := true
	sep := func(clause bool) {
		if clause {
			if !strings.HasSuffix(b.String(), "| ") {
				if !space {
					b.WriteByte(' ')
				}
				b.WriteString("| ")
			}
			space = true
			return
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	var prev rune
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == utf8.RuneError:
			sep(false)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if i > 0 && unicode.IsDigit(r) != unicode.IsDigit(prev) && (unicode.IsLetter(prev) || unicode.IsDigit(prev)) &&
				(unicode.IsDigit(r) || unicode.IsDigit(prev)) && r < unicode.MaxASCII && prev < unicode.MaxASCII {
				sep(false)
			}
			if unicode.IsUpper(r) && i > 0 {
				next := rune(0)
				if i+1 < len(rs) {
					next = rs[i+1]
				}
				if unicode.IsLower(prev) || (unicode.IsUpper(prev) && unicode.IsLower(next)) {
					sep(false)
				}
			}
			b.WriteRune(unicode.ToLower(r))
			space = false
		case r == '\'' || r == '’':
		case strings.ContainsRune(".,;:!?()[]{}|\n\r，。；：！？（）【】、", r):
			sep(true)
		default:
			sep(false)
		}
		prev = r
	}
	sep(false)
	return b.String()
}

// normalise reads every generated text as it did before its refactor:
// mixed case, digits, non-ASCII letters and digits, CJK, clause
// punctuation, apostrophes and invalid UTF-8, near the length bound too.
func TestNormalise_SameAsBefore(t *testing.T) {
	pieces := []string{"a", "Z", "q", "HTTP", "Error", "x", "7", "42", "٣", "É", "é", "ß", "Σ", "ǅ", "余额", "，", "。",
		"'", "’", " ", "_", "-", "|", "| ", ".", "\n", "\r", "\x00", "\xff", "\xe4\xbd", "\t", "(", "]", "�", "𝟘"}
	r := rand.New(rand.NewPCG(30, 1))
	for i := range 50000 {
		var b strings.Builder
		n := r.IntN(12)
		if i%500 == 0 {
			n = maxWordsText / 2
		}
		for range n {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := normalise(s), normaliseBefore(s); got != want {
			t.Fatalf("normalise(%q) = %q, before %q", s, got, want)
		}
	}
}
