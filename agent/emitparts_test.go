package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// The emitter's two states alone: what was shown live (liveReply) and
// what is held back until the commit (heldReply).

// liveReply keeps what was shown, and a retry trims its repeats: a text
// repeat unless the retry continues in place, a thought's restart always.
func TestLiveReply(t *testing.T) {
	var l liveReply
	if l.any() {
		t.Fatal("a new liveReply has shown something")
	}
	l.add(acp.UpdateAgentThoughtChunk, "Let me think about the fox.")
	l.add(acp.UpdateAgentMessageChunk, "The quick brown fox jumps")
	if text, thought := l.reply(); text != "The quick brown fox jumps" || thought != "Let me think about the fox." || !l.any() {
		t.Fatalf("reply() = %q, %q", text, thought)
	}

	// A retry that starts over: its repeats are trimmed, thought and text.
	l.beginAttempt(false)
	var thought, text string
	for _, c := range [][2]string{{"Let me think ", ""}, {"about the fox. Then jump.", ""}, {"", "The quick brown fox jumps"}, {"", " over the dog."}} {
		th, tx := l.trim(c[0], c[1])
		thought, text = thought+th, text+tx
	}
	th, tx := l.finish()
	thought, text = thought+th, text+tx
	if thought != " Then jump." || text != " over the dog." {
		t.Errorf("a restart showed thought %q and text %q, want only what is new", thought, text)
	}

	// In place, the provider continues the shown text: nothing of the
	// text is held back or trimmed; the thought is trimmed still.
	l.beginAttempt(true)
	if th, tx := l.trim("Let me think about the fox.", "The quick"); th != "" || tx != "The quick" {
		t.Errorf("in place: trim = %q, %q; want the thought trimmed, the text as it came", th, tx)
	}

	l.reset()
	if l.any() || l.resume != nil || l.resumeThought != nil {
		t.Errorf("reset left %+v", l)
	}
	// Nothing shown: nothing to trim.
	l.beginAttempt(false)
	if th, tx := l.trim("a", "b"); th != "a" || tx != "b" {
		t.Errorf("with nothing shown, trim = %q, %q", th, tx)
	}
}

// heldReply holds an attempt's output, keeps the parts of a reply cut at
// the output limit, and gives them up once.
func TestHeldReply(t *testing.T) {
	var h heldReply
	h.add("plan", "")
	h.add(" more", "Hel")
	h.add("", "lo")
	want := output{{acp.UpdateAgentThoughtChunk, []byte("plan more")}, {acp.UpdateAgentMessageChunk, []byte("Hello")}}
	if diff := cmp.Diff(want, h.cur, cmp.AllowUnexported(segment{})); diff != "" {
		t.Errorf("held output (-want +got):\n%s", diff)
	}
	h.dropAttempt()
	if h.cur != nil {
		t.Errorf("dropAttempt left %v", h.cur)
	}

	h.add("a", "One, ")
	h.keep(&llm.Reply{Content: "One, ", Reasoning: "a"})
	h.add("b", "two.")
	h.keep(&llm.Reply{Content: "two.", Reasoning: "b"})
	if got := h.prefix(); got != "One, two." {
		t.Errorf("prefix = %q", got)
	}
	if text, reasoning := h.joined(); text != "One, two." || reasoning != "ab" {
		t.Errorf("joined = %q, %q", text, reasoning)
	}
	if parts := h.take(); len(parts) != 2 || string(parts[1].out[1].text) != "two." {
		t.Errorf("take = %+v", parts)
	}
	if parts := h.take(); parts != nil {
		t.Errorf("a second take = %+v, want nothing", parts)
	}

	h.answer("Nothing to retry.")
	parts := h.take()
	if len(parts) != 1 || parts[0].reply.Content != "Nothing to retry." || len(parts[0].out) != 1 || parts[0].out[0].kind != acp.UpdateAgentMessageChunk {
		t.Errorf("an answer's parts = %+v", parts)
	}
	h.add("x", "y")
	h.keep(&llm.Reply{Content: "y"})
	h.reset()
	if h.cur != nil || h.parts != nil {
		t.Errorf("reset left %+v", h)
	}
}
