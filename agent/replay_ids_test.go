package agent_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// Every replayed prompt and reply goes under a messageId of its own, the
// same on every load: a client that tells messages apart by it (Zed) keeps
// two prompts with the same words apart, and a reload draws the same thread.
func TestLoadSession_MessageIDsStableAndUnique(t *testing.T) {
	dir := t.TempDir()
	p := &fakeProvider{chunks: []llm.Chunk{{Content: "hello"}, {FinishReason: "stop"}}}
	a := newAgent(t, dir, p)
	sess, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	const prompts = 3
	for range prompts { // the same words each time
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: sess.SessionID, Prompt: []acp.ContentBlock{acp.TextBlock("same"), acp.TextBlock(" words")}}, &recorder{}); err != nil {
			t.Fatal(err)
		}
	}
	type chunk struct{ kind, id string }
	load := func() []chunk {
		t.Helper()
		rec := &recorder{}
		if _, err := newAgent(t, dir, p).LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: sess.SessionID, Cwd: "/p"}, rec); err != nil {
			t.Fatalf("LoadSession: %v", err)
		}
		var out []chunk
		for _, u := range rec.updates {
			switch u.SessionUpdate {
			case acp.UpdateUserMessageChunk, acp.UpdateAgentMessageChunk, acp.UpdateAgentThoughtChunk:
				out = append(out, chunk{u.SessionUpdate, u.MessageID})
			}
		}
		return out
	}
	first, second := load(), load()
	if diff := cmp.Diff(first, second, cmp.AllowUnexported(chunk{})); diff != "" {
		t.Errorf("a second load sent other ids (-first +second):\n%s", diff)
	}
	// One message per run of chunks of one kind; each run its own id.
	var ids []string
	for i, c := range first {
		if c.id == "" {
			t.Errorf("%s without a messageId", c.kind)
		}
		if i > 0 && first[i-1] == c {
			continue // the same message's next block
		}
		if slices.Contains(ids, c.id) {
			t.Errorf("messageId %q names two messages: %v", c.id, first)
		}
		ids = append(ids, c.id)
	}
	if want := 2 * prompts; len(ids) != want {
		t.Errorf("%d messages replayed, want %d (a prompt and a reply per turn): %v", len(ids), want, first)
	}
}
