package inspect

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

// Property: whatever text a log holds (a provider's failure message, a
// prompt), what inspect writes to the terminal has no control or format
// character but its own newlines: a bidi override (U+202E, a format
// character, not a control one) went through and reordered the rest of
// the line on screen.
func TestCleanWriter_Inert(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 7))
	pieces := []string{"\x1b[31m", "\u202e", "\u2066", "\u200b", "\ufeff", "\x07", "\x00", "\r", "\t", "\n", "ok", "é", "\x9b"}
	for range 2000 {
		var in strings.Builder
		for range r.IntN(20) {
			in.WriteString(pieces[r.IntN(len(pieces))])
		}
		var out strings.Builder
		if _, err := (cleanWriter{&out}).Write([]byte(in.String())); err != nil {
			t.Fatal(err)
		}
		if i := strings.IndexFunc(out.String(), func(c rune) bool {
			return c != '\n' && (unicode.IsControl(c) || unicode.Is(unicode.Cf, c))
		}); i >= 0 {
			t.Fatalf("%q was written as %q: active at %d", in.String(), out.String(), i)
		}
	}
}
