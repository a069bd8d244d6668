package llm

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// certainNaive is CertainRepeat's definition, written plainly: at least
// MinRepeat runes, and no period (in runes) shorter than that.
func certainNaive(s string) bool {
	rs := []rune(s)
	if len(rs) < MinRepeat {
		return false
	}
	for q := 1; q < MinRepeat; q++ {
		periodic := true
		for i := 0; i+q < len(rs); i++ {
			if rs[i] != rs[i+q] {
				periodic = false
				break
			}
		}
		if periodic {
			return false
		}
	}
	return true
}

// CertainRepeat agrees with its definition on generated passages: runs of
// short units, passages with borders, long and short ones, in any script.
func TestCertainRepeat_Definition(t *testing.T) {
	units := []string{"=", "ab", "</div>\n", "é", "日本語", "x", "}\n", "0 ", "the quick brown fox jumps", "🦊"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(4) {
			u := units[r.IntN(len(units))]
			b.WriteString(strings.Repeat(u, r.IntN(30)))
		}
		s := b.String()
		if n := len([]rune(s)); n > 0 && r.IntN(2) == 0 { // a partial unit, or a border
			s += string([]rune(s)[:r.IntN(n)])
		}
		if got, want := CertainRepeat(s), certainNaive(s); got != want {
			t.Fatalf("CertainRepeat(%q) = %v, want %v", s, got, want)
		}
	}
}

// The echo's property, over generated prefixes P and replies: a reply that
// does not start with the whole prefix comes through whole (unless it
// stops inside the prefix, by a passage certainly a repeat); a whole repeat
// is dropped for a provider documented to send one, and for one that may
// only when it is certainly a repeat. Fed in random pieces, as deltas come.
func TestEcho_Property(t *testing.T) {
	tokens := []string{"}", "\n", "</div>", "the", " ", "fox", "=", "é", "日本", "return", ";", "{"}
	text := func(r *rand.Rand, n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(tokens[r.IntN(len(tokens))])
		}
		return b.String()
	}
	for seed := range uint64(5000) {
		r := rand.New(rand.NewPCG(seed, 7))
		prefix := text(r, 1+r.IntN(20))
		rest := text(r, r.IntN(10))
		var reply string
		switch r.IntN(4) {
		case 0: // the documented echo, then the rest
			reply = prefix + rest
		case 1: // stops inside the prefix
			reply = string([]rune(prefix)[:r.IntN(len([]rune(prefix)))])
		case 2: // starts like the prefix, then goes its own way
			reply = string([]rune(prefix)[:r.IntN(len([]rune(prefix)))]) + "§" + rest
		default:
			reply = rest
		}
		for _, sure := range []bool{false, true} {
			want := reply
			switch {
			case strings.HasPrefix(reply, prefix) && (sure || certainNaive(prefix)):
				want = reply[len(prefix):]
			case len(reply) < len(prefix) && strings.HasPrefix(prefix, reply) && certainNaive(reply):
				want = ""
			}
			e := &echo{prefix: prefix, sure: sure}
			var got strings.Builder
			for rs := []rune(reply); len(rs) > 0; {
				n := 1 + r.IntN(min(len(rs), 7))
				got.WriteString(e.feed(string(rs[:n])))
				rs = rs[n:]
			}
			got.WriteString(e.end())
			if got.String() != want {
				t.Fatalf("seed %d, sure %v: prefix %q, reply %q: got %q, want %q", seed, sure, prefix, reply, got.String(), want)
			}
		}
	}
}
