package agent

import (
	"context"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	clip "github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/llm"
)

// heldReply is the emitter's held state: the current attempt's output,
// held back until it has finished, and the parts of the reply kept so far
// (attempts cut at the output limit that the next one continues). It is
// also where a slash command's answer waits for the commit, in either
// mode. Nothing of it is sent before the reply is committed (emitter.flush).
type heldReply struct {
	cur   output
	parts []part
}

// part is a finished attempt's output, held back until the whole reply is.
type part struct {
	reply *llm.Reply
	out   output
}

// reset starts a new request, or forgets a reply that will not be sent.
func (h *heldReply) reset() { h.cur, h.parts = nil, nil }

// dropAttempt drops the current attempt's output: a failed attempt's, or a
// discarded truncated one's. Nothing of it was sent.
func (h *heldReply) dropAttempt() { h.cur = nil }

// add holds a chunk's thought and text.
func (h *heldReply) add(thought, text string) {
	h.cur.add(acp.UpdateAgentThoughtChunk, thought)
	h.cur.add(acp.UpdateAgentMessageChunk, text)
}

// keep keeps the finished attempt's output as a part of the reply.
func (h *heldReply) keep(reply *llm.Reply) {
	h.parts = append(h.parts, part{reply: reply, out: h.cur})
	h.cur = nil
}

// prefix is the kept parts' text, which the next attempt continues.
func (h *heldReply) prefix() string {
	var b strings.Builder
	for _, p := range h.parts {
		b.WriteString(p.reply.Content)
	}
	return b.String()
}

// joined is the kept parts as one reply's text and reasoning, verbatim.
func (h *heldReply) joined() (text, reasoning string) {
	var t, r strings.Builder
	for _, p := range h.parts {
		t.WriteString(p.reply.Content)
		r.WriteString(p.reply.Reasoning)
	}
	return t.String(), r.String()
}

// answer holds a reply Rebound made itself as the one part to send.
func (h *heldReply) answer(text string) {
	h.parts = []part{{reply: &llm.Reply{Content: text, FinishReason: llm.FinishStop}, out: output{{kind: acp.UpdateAgentMessageChunk, text: []byte(text)}}}}
}

// take returns the parts to send, once: held is empty after.
func (h *heldReply) take() []part {
	parts := h.parts
	h.parts = nil
	return parts
}

// heldPieceBytes is the most text one held-mode update carries.
const heldPieceBytes = 4 << 10

// segment is a run of output of one kind (message or thought), as it came.
type segment struct {
	kind string // acp.UpdateAgentMessageChunk or acp.UpdateAgentThoughtChunk
	text []byte
}

// output is an attempt's held output: memory in proportion to its text,
// whatever the number of chunks it came in.
type output []segment

func (o *output) add(kind, text string) {
	if text == "" {
		return
	}
	if n := len(*o); n > 0 && (*o)[n-1].kind == kind {
		(*o)[n-1].text = append((*o)[n-1].text, text...)
		return
	}
	*o = append(*o, segment{kind: kind, text: []byte(text)})
}

// send sends held output in order, in pieces of at most heldPieceBytes cut
// at rune boundaries, all under the message's id.
func (o output) send(ctx context.Context, c updater, sessionID, msgID string) error {
	for _, seg := range o {
		for rest := string(seg.text); len(rest) > 0; {
			piece := clip.Prefix(rest, heldPieceBytes)
			if err := sendChunk(ctx, c, sessionID, seg.kind, msgID, piece); err != nil {
				return err
			}
			rest = rest[len(piece):]
		}
	}
	return nil
}
