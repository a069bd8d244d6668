package llm

import "strings"

// Stage 5 of a stream, continuation trimming (see stream): a reply
// continued in place (Message.Prefix) from a provider that repeats, or may
// repeat, the prefix it was given has that repeat dropped from the start
// of its content, by the one rule for repeats, CertainRepeat (the agent's
// resumer trims a continuation asked for with a prompt by the same rule).
// It runs last, on text the scrubber has already let through, so what it
// holds back is final text.
//
// It takes nothing from go-openai: the prefix mark goes onto go-openai's
// request body in the transport (encodeMessages).

// echo drops the prefix from the start of a continuation whose provider
// repeats it. Only an exact repeat of the whole prefix is dropped: always
// for a provider documented to send one, and only when CertainRepeat says
// so for one that may; text is held back only while it still matches the
// prefix's beginning.
type echo struct {
	prefix string
	// sure: the provider is documented to repeat the prefix, so a whole
	// repeat of it is one whatever its length.
	sure bool
	held strings.Builder
	done bool
}

// feed takes the continuation's next text and returns what is new in it.
func (e *echo) feed(s string) string {
	if e.done || s == "" {
		return s
	}
	e.held.WriteString(s)
	h := e.held.String()
	if len(h) < len(e.prefix) && strings.HasPrefix(e.prefix, h) {
		return ""
	}
	e.done = true
	if strings.HasPrefix(h, e.prefix) && (e.sure || CertainRepeat(e.prefix)) {
		return h[len(e.prefix):]
	}
	return h
}

// end is called at the finish and returns what is still held: the start
// of the prefix, which stopped short. Only a passage that is certainly a
// repeat is dropped; a reply that is, say, the prefix's first word is the
// reply, even from a provider that repeats prefixes (its repeat would have
// been whole).
func (e *echo) end() string {
	if e.done {
		return ""
	}
	e.done = true
	if h := e.held.String(); !CertainRepeat(h) {
		return h
	}
	return ""
}

// trim is the stage: it drops the repeat from c's content and, at the
// finish, releases what is still held. A nil echo (no repeat can come)
// changes nothing.
func (e *echo) trim(c *Chunk) {
	if e == nil {
		return
	}
	c.Content = e.feed(c.Content)
	if c.FinishReason != "" {
		c.Content += e.end()
	}
}
