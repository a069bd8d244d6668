package agent

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/rebound-agent/rebound/llm"
)

// Property of the resumers (reply and thoughts), over generated cases: the
// shown text S followed by what a continuation shows is
//
//   - S+C when the continuation C is genuine, even when C starts with a
//     passage that ends S by coincidence (`}`, `</div>`, a word, a run of
//     "=" or of closing tags of any length);
//   - S+C when the continuation repeats a passage R that ends S (or the
//     whole of S: a restart) and then goes on with C, if R is certainly a
//     repeat by the definition (at least llm.MinRepeat runes, smallest
//     period at least as long), checked by a naive oracle below; S+R+C
//     otherwise (shown twice, never lost);
//   - S when the continuation restarts S and stops short, by a passage
//     certain as a restart; S+P (P kept) otherwise. A passage anchored at
//     S's first character (all of S, or a restart that stops short) is
//     weighed as a restart (llm.CertainRestart), by its own naive oracle.
//
// The generator keeps what is certain under its control: S holds one "§"
// within its last llm.MinRepeat runes and C never holds one, so no passage
// of C can end S by chance for llm.MinRepeat runes except inside a run of a
// short unit, which the definition leaves alone.
func TestResumer_Property(t *testing.T) {
	for seed := range uint64(4000) {
		checkResumerCase(t, seed)
		if t.Failed() {
			return
		}
	}
}

// FuzzResumer is TestResumer_Property over the seeds the fuzzer picks.
func FuzzResumer(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { checkResumerCase(t, seed) })
}

var (
	// words of prose and code, and closing tokens that end a shown text
	// and start its genuine continuation all the time.
	propTokens = []string{"the", "fox", " ", " ", "\n", "\t", "return", "nil", "err", "}", "{", "()", ";", "</div>", "<div>",
		"end", "=", "0", ",", ".", "é", "日本", "if", "x", "  ", "\n}\n", ")", "<", ">", "🦊"}
	// units whose runs genuine text continues across a cut.
	propUnits = []string{"=", "</div>\n", "0 ", "}\n", "ab", "\t", "-", " | ", "end\n", "日"}
)

func propText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(propTokens[r.IntN(len(propTokens))])
	}
	return b.String()
}

// runeSuffix is s's last n runes (all of s when it has fewer).
func runeSuffix(s string, n int) string {
	rs := []rune(s)
	return string(rs[max(len(rs)-n, 0):])
}

// certainNaive is the definition of llm.CertainRepeat, written plainly:
// at least MinRepeat runes, and no period (in runes) shorter than that.
func certainNaive(s string) bool {
	rs := []rune(s)
	return len(rs) >= llm.MinRepeat && !periodBelow(rs, llm.MinRepeat)
}

// periodBelow reports whether some unit of fewer than n runes repeats
// through all of rs.
func periodBelow(rs []rune, n int) bool {
	for q := 1; q < n; q++ {
		periodic := true
		for i := 0; i+q < len(rs); i++ {
			if rs[i] != rs[i+q] {
				periodic = false
				break
			}
		}
		if periodic {
			return true
		}
	}
	return false
}

// certainRestartNaive is the definition of llm.CertainRestart, written
// plainly: certain as a repeat, or at least MinRestart runes with no period
// shorter than that and two runs of two or more letters.
func certainRestartNaive(s string) bool {
	if certainNaive(s) {
		return true
	}
	rs := []rune(s)
	if len(rs) < llm.MinRestart || periodBelow(rs, llm.MinRestart) {
		return false
	}
	words := 0
	for _, w := range strings.FieldsFunc(s, func(c rune) bool { return !unicode.IsLetter(c) }) {
		if len([]rune(w)) >= 2 {
			words++
		}
	}
	return words >= 2
}

func checkResumerCase(t *testing.T, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	// S: text, the marker, then a tail: short text, or a run of a unit.
	marker := "§" + strconv.Itoa(r.IntN(1000))
	var tail string
	if r.IntN(3) == 0 {
		tail = strings.Repeat(propUnits[r.IntN(len(propUnits))], 1+r.IntN(60))
	} else {
		tail = runeSuffix(propText(r, r.IntN(12)), llm.MinRepeat-len([]rune(marker)))
	}
	shown := propText(r, r.IntN(40)) + marker + tail
	// C, genuine: maybe starting with what ends S by coincidence.
	cont := propText(r, r.IntN(20))
	switch r.IntN(3) {
	case 0: // a passage of the tail again: `}`, `</div>`, a word, more of a run
		tailRunes := len([]rune(tail))
		cont = runeSuffix(tail, r.IntN(tailRunes+1)) + cont
	case 1: // a short beginning of S again
		cont = string([]rune(shown)[:min(r.IntN(6), len([]rune(shown)))]) + cont
	}
	var (
		continuation string
		want         string // what the continuation must show, before "apart"
		kept         bool   // nothing trimmed: the thought resumer sets it apart
	)
	switch r.IntN(3) {
	case 0: // genuine
		continuation, want, kept = cont, cont, true
	case 1: // repeats a passage that ends S, from within the marker's reach, or all of S
		sr := []rune(shown)
		at := len([]rune(shown[:strings.Index(shown, "§")])) // the marker's rune
		from := r.IntN(at + 1)
		if r.IntN(4) == 0 {
			from = 0 // a restart from the beginning
		}
		rep := string(sr[from:])
		continuation = rep + cont
		certain := certainNaive
		if from == 0 {
			certain = certainRestartNaive // all of S: a restart
		}
		if certain(rep) {
			want = cont
		} else {
			want, kept = rep+cont, true
		}
	default: // a restart that stops short of S
		sr := []rune(shown)
		p := string(sr[:r.IntN(len(sr))])
		continuation = p
		if certainRestartNaive(p) {
			want = ""
		} else {
			want, kept = p, true
		}
	}
	// The continuation arrives in random pieces, cut at rune boundaries.
	var pieces []string
	for rest := []rune(continuation); len(rest) > 0; {
		n := 1 + r.IntN(min(len(rest), 9))
		pieces = append(pieces, string(rest[:n]))
		rest = rest[n:]
	}
	for _, thought := range []bool{false, true} {
		res := &resumer{shown: shown}
		w := want
		if thought {
			res = thoughtResumer(shown)
			if kept && want != "" {
				w = res.apart + want
			}
		}
		var got strings.Builder
		for _, p := range pieces {
			got.WriteString(res.feed(p))
		}
		got.WriteString(res.finish())
		if got.String() != w {
			t.Errorf("seed %d (thought %v): shown %q, continuation %q\nshows %q\nwant  %q", seed, thought, shown, continuation, got.String(), w)
		}
	}
}
