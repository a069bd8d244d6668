package session

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// stringBefore is fixedReader.string as it was before its escapes were
// decoded by named steps, kept while the refactor is checked against it.
func (r *fixedReader) stringBefore(p *string) {
	if !r.ok {
		return
	}
	b := r.b
	if len(b) == 0 || b[0] != '"' {
		r.ok = false
		return
	}
	b = b[1:]
	i := plainRun(b)
	if i < len(b) && b[i] == '"' {
		if !utf8.Valid(b[:i]) {
			r.ok = false
			return
		}
		*p, r.b = string(b[:i]), b[i+1:]
		return
	}
	end := stringEnd(b)
	if end < 0 {
		r.ok = false
		return
	}
	in := b[:end]
	// Escapes are ASCII, so the encoding is valid UTF-8 just when the text
	// between them is.
	if !utf8.Valid(in) {
		r.ok = false
		return
	}
	var s strings.Builder
	s.Grow(end) // the decoded string is never longer than its encoding
	for {
		i := plainRun(in)
		s.Write(in[:i])
		in = in[i:]
		if len(in) == 0 {
			break
		}
		if in[0] != '\\' || len(in) < 2 { // a control character
			r.ok = false
			return
		}
		n := 2
		switch in[1] {
		case '"', '\\', '/':
			s.WriteByte(in[1])
		case 'b':
			s.WriteByte('\b')
		case 'f':
			s.WriteByte('\f')
		case 'n':
			s.WriteByte('\n')
		case 'r':
			s.WriteByte('\r')
		case 't':
			s.WriteByte('\t')
		case 'u':
			c, ok := hex4(in[2:])
			n = 6
			if ok && utf16.IsSurrogate(c) {
				// Only a high surrogate followed by a low one is a rune.
				var lo rune
				if len(in) >= 12 && in[6] == '\\' && in[7] == 'u' {
					lo, ok = hex4(in[8:])
				} else {
					ok = false
				}
				if c = utf16.DecodeRune(c, lo); c == utf8.RuneError {
					ok = false
				}
				n = 12
			}
			if !ok {
				r.ok = false
				return
			}
			s.WriteRune(c)
		default:
			r.ok = false
			return
		}
		in = in[n:]
	}
	*p, r.b = s.String(), b[end+1:]
}

// fixedReader.string reads generated strings as it did before its
// refactor: plain and escaped text, every escape, surrogate pairs whole,
// lone, reversed or cut, control characters, invalid UTF-8 and unclosed
// strings, with what follows them.
func TestFixedString_SameAsBefore(t *testing.T) {
	pieces := []string{"a", "é", "日", `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\x`, `\`, "\n", "\x00", "\x7f",
		`\u00e9`, `\u00E9`, `\u0000`, `\ud83d`, `\ude00`, `\uD83D\uDE00`, `\ud83d\u0041`, `\ude00\ud83d`, `\u12`, `\uzzzz`,
		`\ufffd`, "\xff", "\xe6\x97", `"`, ",", "}"}
	r := rand.New(rand.NewPCG(30, 4))
	for range 200000 {
		var b strings.Builder
		if r.IntN(20) > 0 {
			b.WriteByte('"')
		}
		for range r.IntN(10) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in := []byte(b.String())
		got, want := fixedReader{b: in, ok: true}, fixedReader{b: in, ok: true}
		var gs, ws string
		got.string(&gs)
		want.stringBefore(&ws)
		if got.ok != want.ok || gs != ws || string(got.b) != string(want.b) {
			t.Fatalf("string(%q) = %q, %v, rest %q; before %q, %v, rest %q", in, gs, got.ok, got.b, ws, want.ok, want.b)
		}
	}
}

// numberBefore is fixedReader.number before its digit runs were named.
func (r *fixedReader) numberBefore(frac bool) []byte {
	b := r.b
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || n > 1 && b[start] == '0' {
		r.ok = false
		return nil
	}
	if frac {
		if i < len(b) && b[i] == '.' {
			i++
			if digits() == 0 {
				r.ok = false
				return nil
			}
		}
		if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
			i++
			if i < len(b) && (b[i] == '+' || b[i] == '-') {
				i++
			}
			if digits() == 0 {
				r.ok = false
				return nil
			}
		}
	}
	r.b = b[i:]
	return b[:i]
}

// fixedReader.number cuts generated numbers as it did before its
// refactor: signs, leading zeros, fractions and exponents whole, empty or
// cut, with and without frac, and what follows them.
func TestFixedNumber_SameAsBefore(t *testing.T) {
	pieces := []string{"-", "+", "0", "1", "9", "07", ".", "e", "E", "x", ",", "}", " "}
	r := rand.New(rand.NewPCG(30, 5))
	for range 200000 {
		var b strings.Builder
		for range r.IntN(9) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in := []byte(b.String())
		frac := r.IntN(2) == 0
		got, want := fixedReader{b: in, ok: true}, fixedReader{b: in, ok: true}
		gn, wn := got.number(frac), want.numberBefore(frac)
		if got.ok != want.ok || string(gn) != string(wn) || string(got.b) != string(want.b) {
			t.Fatalf("number(%q, %v) = %q, %v, rest %q; before %q, %v, rest %q", in, frac, gn, got.ok, got.b, wn, want.ok, want.b)
		}
	}
}
