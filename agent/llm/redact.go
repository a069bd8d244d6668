package llm

import "strings"

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
type scrubber struct {
	r                  redactor
	content, reasoning holdback
	names, args        []holdback // by tool call index
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
	for i := range c.ToolCalls {
		d := &c.ToolCalls[i]
		d.ID = r.str(d.ID) // an id comes whole: Reply.Add replaces it
		if d.Index < 0 || d.Index >= MaxToolCalls {
			// Reply.Add refuses the stream; redact what it may quote.
			d.Name, d.Arguments = r.str(d.Name), r.str(d.Arguments)
			continue
		}
		for len(s.names) <= d.Index {
			s.names, s.args = append(s.names, holdback{}), append(s.args, holdback{})
		}
		d.Name = s.names[d.Index].feed(r, d.Name)
		d.Arguments = s.args[d.Index].feed(r, d.Arguments)
	}
	c.FinishReason = r.str(c.FinishReason)
	if c.FinishReason != "" {
		s.flush(c)
	}
}

// flush adds what is held to c.
func (s *scrubber) flush(c *Chunk) {
	c.Content += s.content.flush()
	c.Reasoning += s.reasoning.flush()
	for i := range s.names {
		name, args := s.names[i].flush(), s.args[i].flush()
		if name != "" || args != "" {
			c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: i, Name: name, Arguments: args})
		}
	}
}

// cut adds to c what is held when the stream failed, as capped treats a
// capture cut short: a held start of the key of minKeyCut bytes or more may
// be the key, cut, and is dropped; a shorter one is text.
func (s *scrubber) cut(c *Chunk) {
	keep := func(h *holdback) string {
		if t := h.flush(); len(t) < minKeyCut {
			return t
		}
		return ""
	}
	c.Content += keep(&s.content)
	c.Reasoning += keep(&s.reasoning)
	for i := range s.names {
		name, args := keep(&s.names[i]), keep(&s.args[i])
		if name != "" || args != "" {
			c.ToolCalls = append(c.ToolCalls, ToolCallDelta{Index: i, Name: name, Arguments: args})
		}
	}
}

// holding reports whether any text is held back.
func (s *scrubber) holding() bool {
	if s.content.held != "" || s.reasoning.held != "" {
		return true
	}
	for i := range s.names {
		if s.names[i].held != "" || s.args[i].held != "" {
			return true
		}
	}
	return false
}
