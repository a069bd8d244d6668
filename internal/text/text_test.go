package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestFloor(t *testing.T) {
	s := "aé€b" // a, é (2 bytes), € (3 bytes), b
	for _, c := range []struct{ i, want int }{
		{0, 0}, {1, 1}, {2, 1}, {3, 3}, {4, 3}, {5, 3}, {6, 6}, {7, 7}, {9, 9},
	} {
		if got := Floor(s, c.i); got != c.want {
			t.Errorf("Floor(%q, %d) = %d, want %d", s, c.i, got, c.want)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"short", 10, "short"},
		{"shorter", 5, "short"},
		{"aé€b", 2, "a"},
		{"aé€b", 5, "aé"},
		{"aé€b", 6, "aé€"},
		{"€", 0, ""},
	} {
		got := Prefix(c.s, c.n)
		if got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
		if !utf8.ValidString(got) || len(got) > c.n {
			t.Errorf("Prefix(%q, %d) = %q: invalid or too long", c.s, c.n, got)
		}
	}
}

func TestClipChars(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"héllo wörld", 5, "héll…"},
		{"short", 5, "short"},
		{"€€€", 3, "€€€"},
		{"€€€€", 3, "€€…"},
		{"ab", 1, "…"},
	} {
		if got := ClipChars(c.s, c.n); got != c.want {
			t.Errorf("ClipChars(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("aé€b", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || !utf8.ValidString(s) {
			return
		}
		got := Prefix(s, n)
		if len(got) > n || !utf8.ValidString(got) || got != s[:len(got)] {
			t.Fatalf("Prefix(%q, %d) = %q", s, n, got)
		}
		if len(s) > n && n-len(got) >= utf8.UTFMax {
			t.Fatalf("Prefix(%q, %d) = %q cut more than a rune", s, n, got)
		}
	})
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"gpt-5o", "gpt-4o", 1}, {"kitten", "sitting", 3},
		{"modèle", "model", 2}, // in characters, not bytes
		{"recovery.turn_deadline", "recovery.request_deadline", 6},
	} {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := EditDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}

// Property: InertLine's output of any string is one line of at most n
// characters with no control or format character (nothing a terminal
// acts on), and printable text without whitespace is kept as it is.
func TestInertLine(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"\x1b", "[31m", "]0;t\x07", "\x9b", "\u202e", "\u200b", "\ufeff", "\r\n", "\t", " ", "\x00", "\x7f", "é", "日本", "a", "\xff", "\u2028"}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(30) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		n := 1 + r.IntN(40)
		got := InertLine(b.String(), n)
		if i := strings.IndexFunc(got, func(c rune) bool {
			return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || unicode.IsSpace(c) && c != ' '
		}); i >= 0 {
			t.Fatalf("InertLine(%q, %d) = %q: an active character at %d", b.String(), n, got, i)
		}
		if utf8.RuneCountInString(got) > n {
			t.Fatalf("InertLine(%q, %d) = %q: longer than %d", b.String(), n, got, n)
		}
	}
	if got := InertLine("gpt-4o/日本-é", 40); got != "gpt-4o/日本-é" {
		t.Errorf("printable text changed to %q", got)
	}
	if got := InertLine("a\x1b[2J  b\n\tc", 40); got != `a\x1b[2J b c` {
		t.Errorf("InertLine = %q", got)
	}
}
