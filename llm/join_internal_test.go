package llm

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// arrivals is a chunkSource whose chunks arrive in groups: read without
// waiting gives only the rest of the group already there.
type arrivals struct {
	groups [][]Chunk
	err    error // after the last group
	waits  int   // reads that waited
	t      *testing.T
}

func (a *arrivals) read(wait bool) (Chunk, bool, error) {
	for len(a.groups) > 0 && len(a.groups[0]) == 0 {
		if !wait {
			return Chunk{}, false, nil // the next group has not arrived
		}
		a.groups = a.groups[1:]
	}
	if len(a.groups) == 0 {
		return Chunk{}, true, a.err
	}
	if wait {
		a.waits++
	}
	c := a.groups[0][0]
	a.groups[0] = a.groups[0][1:]
	return c, true, nil
}

// genChunk is one decoded event: a delta of one kind or several, a tool
// call fragment, a finish or usage.
func genChunk(r *rand.Rand) Chunk {
	text := func() string { return strings.Repeat(string(rune('a'+r.IntN(3))), 1+r.IntN(3)) }
	switch r.IntN(10) {
	case 0, 1, 2:
		return Chunk{Content: text()}
	case 3, 4:
		return Chunk{Reasoning: text()}
	case 5:
		return Chunk{Content: text(), Reasoning: text()}
	case 6, 7:
		d := ToolCallDelta{Index: r.IntN(2), Arguments: text()}
		switch r.IntN(4) {
		case 0:
			d.ID = "id" + text()
		case 1:
			d.Name = "f"
		case 2:
			d.Unindexed = true
		}
		c := Chunk{ToolCalls: []ToolCallDelta{d}}
		if r.IntN(3) == 0 {
			c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: r.IntN(2), Arguments: text()})
		}
		return c
	case 8:
		return Chunk{FinishReason: FinishStop}
	}
	return Chunk{Usage: &Usage{PromptTokens: r.IntN(9)}}
}

// The joiner alone, over generated streams of chunks arriving in groups:
// the joined chunks make the same reply as the chunks apart; each is of
// one kind; none joins chunks of two groups (nothing waits for more); and
// the source's error comes after every chunk before it.
func TestJoiner_Property(t *testing.T) {
	// 300 seeds under -race: they reach every statement of join.go that
	// 3000 do, and the joiner is one goroutine's.
	seeds := uint64(3000)
	if raceEnabled {
		seeds = 300
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(seed, 11))
		var groups [][]Chunk
		var all []Chunk
		for range 1 + r.IntN(6) {
			var g []Chunk
			for range 1 + r.IntN(8) {
				c := genChunk(r)
				g = append(g, c)
				all = append(all, c)
			}
			groups = append(groups, g)
		}
		failed := errors.New("read failed")
		src := &arrivals{groups: cloneGroups(groups), err: failed, t: t}
		j := joiner{src: src}
		var want, got Reply
		for _, c := range all {
			want.Add(c)
		}
		n := 0
		for {
			c, err := j.next()
			if err != nil {
				if err != failed {
					t.Fatalf("seed %d: err %v", seed, err)
				}
				break
			}
			n++
			if k := kindOf(c); k != 0 && k != kindContent && k != kindReasoning && k != kindTools {
				// a mixed chunk only ever comes as it was decoded
				if !containsChunk(all, c) {
					t.Fatalf("seed %d: joined a mixed chunk %+v", seed, c)
				}
			}
			got.Add(c)
		}
		opts := []cmp.Option{cmpopts.IgnoreUnexported(Reply{}), cmpopts.IgnoreFields(Reply{}, "Deltas")}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Fatalf("seed %d: joined reply differs (-apart +joined):\n%s", seed, diff)
		}
		if src.waits > n {
			t.Fatalf("seed %d: %d reads waited for %d chunks: the joiner waited for more", seed, src.waits, n)
		}
		if n < len(groups) {
			t.Fatalf("seed %d: %d chunks from %d groups: joined across a wait", seed, n, len(groups))
		}
	}
}

func cloneGroups(gs [][]Chunk) [][]Chunk {
	out := make([][]Chunk, len(gs))
	for i, g := range gs {
		for _, c := range g {
			c.ToolCalls = append([]ToolCallDelta(nil), c.ToolCalls...)
			out[i] = append(out[i], c)
		}
	}
	return out
}

func containsChunk(all []Chunk, c Chunk) bool {
	for _, a := range all {
		if cmp.Equal(a, c, cmpopts.EquateEmpty()) {
			return true
		}
	}
	return false
}

// A joined chunk stops at maxPiece bytes of text, or at a finish reason it
// takes in; off returns every chunk as it came.
func TestJoiner_BoundedAndOff(t *testing.T) {
	big := strings.Repeat("x", 1000)
	var g []Chunk
	for range 100 {
		g = append(g, Chunk{Content: big})
	}
	j := joiner{src: &arrivals{groups: [][]Chunk{g}}}
	c, err := j.next()
	if err != nil || len(c.Content) < maxPiece || len(c.Content) > maxPiece+len(big) {
		t.Fatalf("joined %d bytes (%v), want about maxPiece %d", len(c.Content), err, maxPiece)
	}
	u := &Usage{PromptTokens: 1}
	j = joiner{src: &arrivals{groups: [][]Chunk{{{Content: "a"}, {Content: "b"}, {FinishReason: FinishStop}, {Usage: u}}}}}
	if c, _ := j.next(); !cmp.Equal(c, Chunk{Content: "ab", FinishReason: FinishStop}) {
		t.Fatalf("deltas then a finish joined to %+v, want one chunk that ends at the finish", c)
	}
	j = joiner{src: &arrivals{groups: [][]Chunk{g}}, off: true}
	if c, _ := j.next(); c.Content != big {
		t.Fatalf("off joined %d bytes", len(c.Content))
	}
}
