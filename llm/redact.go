package llm

// Stage 4 of a stream, the secret scrubber (see stream): the API key out
// of every text a chunk carries, before anyone sees it. A key split across
// deltas is caught by holding back the end of a text that may be its start
// (holdback); what it lets through is final.
//
// It takes nothing from go-openai: the key is the one given to go-openai's
// client config, and what a provider echoes of it arrives in the chunks the
// decoding stage made.

import (
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
)

// holdback redacts one text that streams in deltas: a reply's content, its
// reasoning, or one tool call's name or arguments. The key may be split
// across deltas, so the end of what came that could be the start of the key
// is held back until the next delta of the same text decides. What it lets
// through is final: it is exactly what redacting the whole text at once
// gives, in order.
type holdback struct{ held string }

// feed takes the next delta and returns what may be shown now.
func (h *holdback) feed(r redactor, d string) string {
	if r == "" {
		return d
	}
	s := d
	if h.held != "" {
		s, h.held = h.held+d, ""
	}
	key := string(r)
	var b strings.Builder
	for {
		i := strings.Index(s, key)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(redactedMark)
		s = s[i+len(key):]
	}
	// No occurrence of the key can start before the longest end of s that
	// is a start of the key: such a start would be a longer one.
	k := partialKey(s, key)
	h.held = s[len(s)-k:]
	if b.Len() == 0 {
		return s[:len(s)-k]
	}
	b.WriteString(s[:len(s)-k])
	return b.String()
}

// flush returns what is held: the text ended, so it is not the key.
func (h *holdback) flush() string {
	s := h.held
	h.held = ""
	return s
}

// partialKey is the length of the longest end of s that is a proper start
// of key.
func partialKey(s, key string) int {
	for k := min(len(key)-1, len(s)); k > 0; k-- {
		if s[len(s)-k] == key[0] && s[len(s)-k:] == key[:k] {
			return k
		}
	}
	return 0
}

// scrubber removes the key from everything a stream's chunks carry that
// reaches the editor, the log or the history: content, reasoning, and tool
// calls' ids, names and arguments. It is the one place reply text is
// redacted; errors are redacted by OpenAI.scrub.
//
// Ids and names come whole in a fragment (a new one starts a new call, see
// Reply.Add), so they are redacted as they are. Arguments stream: each
// call's are held back like text, by the slot that addresses the call (its
// index, or "the latest call" for a fragment without one). When a fragment
// starts a new call in a slot, what the slot's previous call held is
// released first, addressed to that call; calls tracks the calls as the
// caller assembles them, to tell.
type scrubber struct {
	r                  redactor
	content, reasoning holdback
	args               map[int]*holdback // by slot; see slot
	calls              Reply
}

// slot is the key of the call a fragment addresses: its index, or -1.
func slot(d ToolCallDelta) int {
	if d.Unindexed {
		return -1
	}
	return d.Index
}

// chunk redacts c in place. At a finish reason the texts are over and what
// is held goes out with it.
func (s *scrubber) chunk(c *Chunk) {
	r := s.r
	if r == "" {
		return
	}
	c.Content = s.content.feed(r, c.Content)
	c.Reasoning = s.reasoning.feed(r, c.Reasoning)
	if len(c.ToolCalls) > 0 {
		in := c.ToolCalls
		c.ToolCalls = make([]ToolCallDelta, 0, len(in))
		for _, d := range in {
			s.toolCall(c, d)
		}
	}
	c.FinishReason = r.str(c.FinishReason)
	if c.FinishReason != "" {
		s.flush(c)
	}
}

// toolCall redacts fragment d and adds it to c, after what its slot's
// previous call held when d starts a new call.
func (s *scrubber) toolCall(c *Chunk, d ToolCallDelta) {
	r := s.r
	d.ID, d.Name = r.str(d.ID), r.str(d.Name)
	if !d.Unindexed && (d.Index < 0 || d.Index >= MaxToolCalls) {
		// Reply.Add refuses the stream; redact what it may quote.
		d.Arguments = r.str(d.Arguments)
		c.ToolCalls = append(c.ToolCalls, d)
		return
	}
	h := s.args[slot(d)]
	if h == nil {
		h = &holdback{}
		if s.args == nil {
			s.args = map[int]*holdback{}
		}
		s.args[slot(d)] = h
	}
	if _, goesOn := s.calls.callOf(d); !goesOn && h.held != "" && s.seen(d) {
		s.emit(c, ToolCallDelta{Index: d.Index, Unindexed: d.Unindexed, Arguments: h.flush()})
	}
	d.Arguments = h.feed(r, d.Arguments)
	s.emit(c, d)
}

// seen reports whether the caller has a call where d goes: one at its
// index, or any for a fragment without one. A fragment whose text was all
// held back (no id, no name, arguments that may be the key's start) made
// none, so what it held is of the call d goes on with, not a call of its
// own to release before d.
func (s *scrubber) seen(d ToolCallDelta) bool {
	if d.Unindexed {
		return len(s.calls.ToolCalls) > 0
	}
	_, ok := s.calls.slots[d.Index]
	return ok
}

// emit adds d to c and to the calls as the caller assembles them.
func (s *scrubber) emit(c *Chunk, d ToolCallDelta) {
	c.ToolCalls = append(c.ToolCalls, d)
	s.calls.addCall(d) // an error is the caller's to find, in its own Reply
}

// release adds to c what is held, each text through keep.
func (s *scrubber) release(c *Chunk, keep func(string) string) {
	c.Content += keep(s.content.flush())
	c.Reasoning += keep(s.reasoning.flush())
	for _, k := range slices.Sorted(maps.Keys(s.args)) { // in a stable order
		if t := keep(s.args[k].flush()); t != "" {
			s.emit(c, ToolCallDelta{Index: max(k, 0), Unindexed: k < 0, Arguments: t})
		}
	}
}

// flush adds what is held to c: the stream ended, so none of it is the key.
func (s *scrubber) flush(c *Chunk) { s.release(c, func(t string) string { return t }) }

// cut adds to c what is held when the stream failed, as capped treats a
// capture cut short: a held start of the key of minKeyCut bytes or more may
// be the key, cut, and is dropped; a shorter one is text.
func (s *scrubber) cut(c *Chunk) {
	s.release(c, func(t string) string {
		if len(t) < minKeyCut {
			return t
		}
		return ""
	})
}

// end is what is held when the stream ended with err: released whole at
// the body's end (io.EOF), since what ended is not the key; cut as cut does
// after a failure. Nothing held, nothing added.
func (s *scrubber) end(err error) Chunk {
	var rest Chunk
	if !s.holding() {
		return rest
	}
	if errors.Is(err, io.EOF) {
		s.flush(&rest) // text after the finish: it ended, so it is not the key
	} else {
		// Cut short: what may be the key, cut, is never sent. It was not
		// shown either, so live mode continues without it.
		s.cut(&rest)
	}
	return rest
}

// holding reports whether any text is held back.
func (s *scrubber) holding() bool {
	if s.content.held != "" || s.reasoning.held != "" {
		return true
	}
	for _, h := range s.args {
		if h.held != "" {
			return true
		}
	}
	return false
}
