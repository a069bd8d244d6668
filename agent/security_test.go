package agent

import (
	"context"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/llm"
)

// These pin the second security review: what a person approves is what
// runs, and nothing reaches outside the workspace.

// toolCall is a reply that asks for one call.
func toolCall(id, name, args string) func(context.Context, llm.Request) (llm.Stream, error) {
	return reply(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: id, Name: name, Arguments: args}}},
		llm.Chunk{FinishReason: llm.FinishToolCalls})
}

// #15: a provider that numbers its calls from call_0 at every step still
// gives the editor one toolCallId per call, live and in the load replay.
func TestAgent_ToolCallIDsAreUniqueInTheSession(t *testing.T) {
	p := &script{}
	for range 3 {
		p.answers = append(p.answers, toolCall("call_0", "read_file", `{"path":"missing.txt"}`))
	}
	p.answers = append(p.answers, text("done"), toolCall("call_0", "read_file", `{"path":"other.txt"}`), text("again"))
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	live := &editor{}
	for _, prompt := range []string{"one", "two"} {
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, live); err != nil {
			t.Fatal(err)
		}
	}
	unique := func(what string, updates []acp.SessionUpdate) {
		t.Helper()
		seen := map[string]bool{}
		n := 0
		for _, u := range updates {
			if u.SessionUpdate != acp.UpdateToolCall {
				continue
			}
			n++
			if seen[u.ToolCallID] {
				t.Errorf("%s: toolCallId %q is used by two tool calls", what, u.ToolCallID)
			}
			seen[u.ToolCallID] = true
		}
		if n != 4 {
			t.Errorf("%s: %d tool calls, want 4", what, n)
		}
	}
	unique("live", live.updates)
	a.Close()

	b := testAgent(t, Config{Provider: p, StateDir: a.cfg.StateDir})
	replayed := &editor{}
	if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, replayed); err != nil {
		t.Fatal(err)
	}
	unique("replay", replayed.updates)
	// The model's history keeps each call paired with its own result.
	last := p.reqs[len(p.reqs)-1]
	calls, results := map[string]bool{}, map[string]bool{}
	for _, m := range last.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = true
		}
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = true
		}
	}
	if len(calls) != 4 || len(results) != 4 {
		t.Errorf("the last request has %d call ids and %d result ids, want 4 each", len(calls), len(results))
	}
}
