package llm

import (
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The scrubber alone, over generated texts that hold the key, whole or in
// part, cut into random deltas of content, reasoning and one tool call's
// arguments: what it lets through is exactly each text with the key
// replaced, and nothing it lets through at any point holds the key.
func TestScrubber_Property(t *testing.T) {
	const key = "sk-scrub-SECRET-77"
	pieces := []string{key, key[:3], key[:9], "s", "sk", "x", " ", "é", key + key[:5]}
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 5))
		gen := func() string {
			var b strings.Builder
			for range r.IntN(8) {
				b.WriteString(pieces[r.IntN(len(pieces))])
			}
			return b.String()
		}
		texts := [3]string{gen(), gen(), gen()} // content, reasoning, arguments
		s := scrubber{r: newRedactor(key)}
		var got [3]strings.Builder
		var shown strings.Builder
		rest := texts
		for rest != [3]string{} {
			var c Chunk
			for i := range rest {
				n := min(len(rest[i]), r.IntN(6))
				part := rest[i][:n]
				rest[i] = rest[i][n:]
				switch i {
				case 0:
					c.Content = part
				case 1:
					c.Reasoning = part
				case 2:
					if part != "" {
						c.ToolCalls = []ToolCallDelta{{Index: 0, Arguments: part}}
					}
				}
			}
			if rest == [3]string{} && r.IntN(2) == 0 {
				c.FinishReason = FinishStop
			}
			s.chunk(&c)
			collect(&got, &shown, c)
		}
		if r.IntN(2) == 0 {
			collect(&got, &shown, s.end(io.EOF))
		} else {
			collect(&got, &shown, s.end(errors.New("cut")))
			// What is cut may be dropped; what came is still never the key.
			if strings.Contains(shown.String(), key) {
				t.Fatalf("seed %d: the key was let through", seed)
			}
			continue
		}
		for i, text := range texts {
			if want := strings.ReplaceAll(text, key, redactedMark); got[i].String() != want {
				t.Fatalf("seed %d, text %d: got %q, want %q", seed, i, got[i].String(), want)
			}
		}
	}
}

func collect(got *[3]strings.Builder, shown *strings.Builder, c Chunk) {
	got[0].WriteString(c.Content)
	got[1].WriteString(c.Reasoning)
	for _, d := range c.ToolCalls {
		got[2].WriteString(d.Arguments)
	}
	shown.WriteString(c.Content + "|" + c.Reasoning + "|")
}

// What the scrubber holds when a stream fails is dropped when it may be
// the key, cut; when the body ended, it is text.
func TestScrubber_End(t *testing.T) {
	const key = "sk-scrub-SECRET-77"
	for _, tt := range []struct {
		held string
		err  error
		want string
	}{
		{key[:6], io.EOF, key[:6]},
		{key[:6], errors.New("reset"), ""},
		{key[:2], errors.New("reset"), key[:2]},
	} {
		s := scrubber{r: newRedactor(key)}
		c := Chunk{Content: "a" + tt.held}
		s.chunk(&c)
		if c.Content != "a" {
			t.Fatalf("held %q, let through %q", tt.held, c.Content)
		}
		if got := s.end(tt.err); got.Content != tt.want {
			t.Errorf("end(%v) after %q = %q, want %q", tt.err, tt.held, got.Content, tt.want)
		}
		if s.holding() || s.end(tt.err).HasDelta() {
			t.Errorf("end(%v) left text held", tt.err)
		}
	}
}

// Continuation trimming alone, as the stream runs it: a nil stage changes
// nothing; the stage drops the repeat and, at the finish, releases what a
// reply that stopped inside the prefix held.
func TestEcho_TrimStage(t *testing.T) {
	var none *echo
	c := Chunk{Content: "as is", FinishReason: FinishStop}
	none.trim(&c)
	if c.Content != "as is" {
		t.Fatalf("a nil stage changed %q", c.Content)
	}
	e := &echo{prefix: "func main() {", sure: true}
	var out strings.Builder
	for _, d := range []string{"func ", "main() {", "\n\tgo"} {
		c := Chunk{Content: d}
		e.trim(&c)
		out.WriteString(c.Content)
	}
	if out.String() != "\n\tgo" {
		t.Fatalf("trimmed to %q", out.String())
	}
	e = &echo{prefix: "func main() {", sure: true}
	c = Chunk{Content: "func"}
	e.trim(&c)
	held := c.Content
	c = Chunk{FinishReason: FinishStop}
	e.trim(&c)
	if held != "" || c.Content != "func" {
		t.Fatalf("a reply that stopped inside the prefix: held %q, released %q; want all of %q at the finish", held, c.Content, "func")
	}
}

// Tool calls through the scrubber, over generated fragments of two indexed
// slots and of none, with and without ids and names, arguments that hold
// the key whole or cut across fragments: the calls the caller assembles
// from what it lets through are the calls of the fragments as sent, each
// with the key replaced in its arguments (in an order that may differ, see
// below), and never hold the key.
func TestScrubber_ToolCallsProperty(t *testing.T) {
	const key = "sk-scrub-SECRET-77"
	pieces := []string{key, key[:3], key[3:9], key[9:], "s", "x", `"}`, "é"}
	for seed := range uint64(5000) {
		r := rand.New(rand.NewPCG(seed, 9))
		unindexed := r.IntN(3) == 0
		var frags []ToolCallDelta
		for range 1 + r.IntN(10) {
			d := ToolCallDelta{Index: r.IntN(2), Unindexed: unindexed}
			if unindexed {
				d.Index = 0
			}
			switch r.IntN(6) {
			case 0:
				d.ID = "id" + string(rune('a'+r.IntN(3)))
			case 1:
				d.Name = "f" + string(rune('a'+r.IntN(2)))
			}
			for range r.IntN(3) {
				d.Arguments += pieces[r.IntN(len(pieces))]
			}
			frags = append(frags, d)
		}
		var sent, got Reply
		s := scrubber{r: newRedactor(key)}
		for i, d := range frags {
			sent.Add(Chunk{ToolCalls: []ToolCallDelta{d}})
			c := Chunk{ToolCalls: []ToolCallDelta{d}}
			if i == len(frags)-1 {
				c.FinishReason = FinishToolCalls
			}
			s.chunk(&c)
			if err := got.Add(c); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		want := make([]ToolCall, len(sent.ToolCalls))
		for i, tc := range sent.ToolCalls {
			want[i] = ToolCall{ID: tc.ID, Name: tc.Name, Arguments: strings.ReplaceAll(tc.Arguments, key, redactedMark)}
		}
		for _, tc := range got.ToolCalls {
			if strings.Contains(tc.Arguments, key) {
				t.Fatalf("seed %d: the key reached a call's arguments %q (fragments %+v)", seed, tc.Arguments, frags)
			}
		}
		// A call whose first fragments were all held back is seen when its
		// text goes out, so it may come after a call the provider began
		// later: the order may differ, not the calls.
		byText := func(a, b ToolCall) int { return strings.Compare(a.ID+a.Name+a.Arguments, b.ID+b.Name+b.Arguments) }
		slices.SortFunc(want, byText)
		slices.SortFunc(got.ToolCalls, byText)
		if !slices.Equal(want, got.ToolCalls) {
			t.Fatalf("seed %d: fragments %+v\n got %+v\nwant %+v", seed, frags, got.ToolCalls, want)
		}
	}
}
