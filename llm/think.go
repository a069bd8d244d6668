package llm

import (
	"bytes"
	"strings"
)

// Think extraction, part of chunk decoding (stage 2, see stream): models
// that reason inline (DeepSeek-R1 distills, Qwen QwQ and Qwen3, MiniMax M1,
// GLM behind some servers) put their reasoning at the start of content as
// <think>…</think>. The block goes to the reasoning channel, as
// reasoning_content does; the text after it is the reply.
//
// Only a block that starts the content counts: a tag later in a reply is
// the reply's own text (a model explaining the tags). Some servers put the
// opening tag into the prompt, so the content starts inside the block with
// no opening tag. What was shown as the reply cannot be taken back, so
// such a start could only be recognised by holding back the start of every
// reply, and a reply must never wait on a guess: the start is held only
// while more content has already arrived (the joiner's rule, events.ready),
// up to maxUntaggedThink bytes, and recognised when the closing tag ends
// within that. A body that arrives in bursts (a gateway that buffers, a
// replay) is split; a reply streamed token by token shows such a block as
// text. Held text goes out as the reply as soon as nothing more is there.
//
// It runs on content only, never on tool-call arguments, and gives the same
// thoughts and reply however the text is split into chunks (all of which
// arrived together, for a start without an opening tag).

// maxUntaggedThink bounds the content held back while deciding whether it
// began inside a think block without an opening tag (or, before the first
// non-blank character, how much white space is held).
const maxUntaggedThink = 4 << 10

// thinkTags are the tag pairs recognised; <thinking> is the variant some
// fine-tunes and prompts use, <mm:think> MiniMax M3's (vLLM's
// minimax_m3 reasoning parser).
var thinkTags = [...]struct{ open, close string }{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
	{"<mm:think>", "</mm:think>"},
}

type thinkState uint8

const (
	thinkStart    thinkState = iota // deciding: is there an opening tag?
	thinkUntagged                   // no opening tag: does a closing tag come soon?
	thinkInside                     // inside a tagged block: thoughts until its closing tag
	thinkAfter                      // after the block: white space before the reply is dropped
	thinkPass                       // the reply: content passes as it is
)

// thinker extracts a leading think block from a stream's content.
type thinker struct {
	state thinkState
	held  []byte // content held back while deciding (thinkStart, thinkUntagged)
	close string // the closing tag awaited (thinkInside)
	part  string // thinkInside: the end of what came that may start close
	begun bool   // thinkInside: thoughts began (white space before them is dropped)
	// scanned: thinkUntagged, the bytes of held already searched for a
	// closing tag.
	scanned int
}

// maxCloseTag is the longest closing tag's length.
const maxCloseTag = len("</thinking>")

// split moves c's content that is thought into c.Reasoning, after what c
// already carried there, and holds back what is not decided yet. ready
// reports whether the next event has already arrived: a start without an
// opening tag is held only while it has.
func (t *thinker) split(c *Chunk, ready func() bool) {
	if t == nil || t.state == thinkPass {
		return
	}
	if t.state == thinkInside && t.begun && t.part == "" && strings.IndexByte(c.Content, '<') < 0 {
		// Thought that cannot hold the closing tag, nor start it: the
		// common case, with no copy.
		c.Reasoning += c.Content
		c.Content = ""
		return
	}
	var thought, reply strings.Builder
	t.feed(c.Content, &thought, &reply)
	if t.state == thinkUntagged && !ready() {
		reply.Write(t.held) // nothing more came: what is held is the reply
		t.held, t.state = nil, thinkPass
	}
	c.Reasoning += thought.String()
	c.Content = reply.String()
}

// end releases what is held: the content is over (the finish came). A
// start still undecided is the reply; a block never closed is all thought.
func (t *thinker) end(c *Chunk) {
	if t == nil {
		return
	}
	switch t.state {
	case thinkStart, thinkUntagged:
		c.Content += string(t.held)
	case thinkInside:
		c.Reasoning += t.part
	}
	t.held, t.part, t.state = nil, "", thinkPass
}

func (t *thinker) feed(s string, thought, reply *strings.Builder) {
	for s != "" {
		switch t.state {
		case thinkStart, thinkUntagged:
			t.held = append(t.held, s...)
			s = ""
			t.decide(thought, reply)
		case thinkInside:
			s = t.inside(s, thought)
		case thinkAfter:
			s = strings.TrimLeft(s, " \t\r\n")
			if s != "" {
				t.state = thinkPass
			}
		case thinkPass:
			reply.WriteString(s)
			s = ""
		}
	}
}

// decide looks at the held start of the content. It may hand on to inside
// (or after) the part of held that follows a tag. Each call looks only at
// what came since the last (scanned), so holding n bytes costs O(n).
func (t *thinker) decide(thought, reply *strings.Builder) {
	h := t.held
	if t.state == thinkStart {
		rest := bytes.TrimLeft(h, " \t\r\n")
		blanks := len(h) - len(rest)
		for _, tag := range thinkTags {
			// A tag counts only if it ends within the bound, so the
			// decision is the same however the text was split.
			if bytes.HasPrefix(rest, []byte(tag.open)) && blanks+len(tag.open) <= maxUntaggedThink {
				after := string(rest[len(tag.open):])
				t.held, t.state, t.close = nil, thinkInside, tag.close
				t.feed(after, thought, reply)
				return
			}
		}
		if len(h) <= maxUntaggedThink && mayOpen(rest) {
			return // blanks, or the start of an opening tag
		}
		t.state = thinkUntagged
	}
	// No opening tag: a closing one within the first maxUntaggedThink bytes
	// ends a block the server opened in the prompt. What was scanned holds
	// none, so one can only end after it.
	w := h[:min(len(h), maxUntaggedThink)]
	from := max(0, t.scanned-maxCloseTag+1)
	at, tag := -1, ""
	for _, tg := range thinkTags {
		if i := bytes.Index(w[from:], []byte(tg.close)); i >= 0 && (at < 0 || from+i < at) {
			at, tag = from+i, tg.close
		}
	}
	t.scanned = len(w)
	switch {
	case at >= 0 && hasOpenTag(h[:at]):
		// An opening tag before the closing one: the text speaks of tags
		// (or holds a block of its own later), it did not start inside one.
		reply.Write(h)
		t.held, t.state = nil, thinkPass
	case at >= 0:
		thought.Write(bytes.TrimLeft(h[:at], " \t\r\n"))
		after := string(h[at+len(tag):])
		t.held, t.state = nil, thinkAfter
		t.feed(after, thought, reply)
	case len(h) >= maxUntaggedThink:
		reply.Write(h)
		t.held, t.state = nil, thinkPass
	}
}

// hasOpenTag reports whether s holds an opening tag.
func hasOpenTag(s []byte) bool {
	for _, tag := range thinkTags {
		if bytes.Contains(s, []byte(tag.open)) {
			return true
		}
	}
	return false
}

// mayOpen reports whether s (the content after its leading blanks) may
// still become an opening tag.
func mayOpen(s []byte) bool {
	for _, tag := range thinkTags {
		if bytes.HasPrefix([]byte(tag.open), s) {
			return true
		}
	}
	return false
}

// inside takes text within a tagged block and returns what follows its
// closing tag, if it came.
func (t *thinker) inside(s string, thought *strings.Builder) string {
	s = t.part + s
	t.part = ""
	if !t.begun {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" {
			return ""
		}
		t.begun = true
	}
	if i := strings.Index(s, t.close); i >= 0 {
		thought.WriteString(s[:i])
		t.state = thinkAfter
		return s[i+len(t.close):]
	}
	k := partialKey(s, t.close) // the end of s that may start the tag
	thought.WriteString(s[:len(s)-k])
	t.part = s[len(s)-k:]
	return ""
}
