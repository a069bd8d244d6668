package agent

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent/llm"
	"github.com/rebound-agent/rebound/session"
)

// These pin helpers whose effects the golden transcripts only show for the
// cases they happen to hit.

func TestCapOutput_KeepsBeginningAndEnd(t *testing.T) {
	body := strings.Repeat("a", maxToolOutputBytes) + "é" + strings.Repeat("b", maxToolOutputBytes)
	out := capOutput(body + "\n[exit code 3]")
	if !strings.HasPrefix(out, "aaaa") || !strings.HasSuffix(out, "bbbb\n[exit code 3]") {
		t.Errorf("capOutput lost the beginning or the end: %q…%q", out[:10], out[len(out)-30:])
	}
	if !strings.Contains(out, "bytes of output omitted") || len(out) > maxToolOutputBytes+100 {
		t.Errorf("capOutput: %d bytes, marker present: %v", len(out), strings.Contains(out, "omitted"))
	}
	if !utf8.ValidString(out) {
		t.Errorf("capOutput cut inside a rune")
	}
	if short := "fine\n[exit code 0]"; capOutput(short) != short {
		t.Errorf("capOutput changed a short output")
	}
}

func TestToolCalls_IDsAndBounds(t *testing.T) {
	var many []llm.ToolCall
	for range maxToolCallsPerReply + 5 {
		many = append(many, llm.ToolCall{ID: "same", Name: "read_file"})
	}
	got := toolCalls(append([]llm.ToolCall{{ID: "", Name: ""}}, many...))
	if len(got) != maxToolCallsPerReply {
		t.Fatalf("%d calls kept, want %d", len(got), maxToolCallsPerReply)
	}
	seen := map[string]bool{}
	for _, c := range got {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("id %q empty or repeated", c.ID)
		}
		seen[c.ID] = true
	}
	if got[0].Name != "unnamed_tool" || got[1].ID != "same" {
		t.Errorf("first calls = %+v, %+v", got[0], got[1])
	}
}

func TestToLLM_ClosesTurnsForStrictProviders(t *testing.T) {
	user := func(turn int, text, outcome string) session.Message {
		return session.Message{Turn: turn, Role: session.RoleUser, Text: text, TurnOutcome: outcome}
	}
	msgs := []session.Message{
		user(1, "one", "end_turn"),
		{Turn: 1, Role: session.RoleAssistant, Text: "ok"},
		user(2, "two", session.OutcomeTurnFailed),
		user(3, "three", "cancelled"),
		{Turn: 3, Role: session.RoleAssistant, ToolCalls: []session.MessageToolCall{{ID: "a", Name: "x"}, {ID: "b", Name: "y"}}},
		{Turn: 3, Role: session.RoleTool, ToolCallID: "a", Text: "done"},
		user(4, "four", "max_turn_requests"),
		{Turn: 4, Role: session.RoleCompaction, Text: "summary", Replaced: 99},
	}
	got := toLLM(msgs)
	var roles []string
	for _, m := range got {
		roles = append(roles, string(m.Role)+":"+m.ToolCallID)
	}
	// A compaction whose Replaced is beyond the history (a damaged log)
	// leaves the summary, and the turn is still closed after it.
	want := []string{"user:", "assistant:"}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("roles after compaction (-want +got):\n%s", diff)
	}
	got = toLLM(msgs[:7])
	roles = roles[:0]
	for _, m := range got {
		roles = append(roles, string(m.Role)+":"+m.ToolCallID)
	}
	want = []string{"user:", "assistant:", "user:", "assistant:", "user:", "assistant:", "tool:a", "tool:b", "assistant:", "user:", "assistant:"}
	if diff := cmp.Diff(want, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if got[3].Content != turnEndNotes[session.OutcomeTurnFailed] || got[7].Content != notRunOutput || got[10].Content != turnEndNotes["max_turn_requests"] {
		t.Errorf("notes: %q, %q, %q", got[3].Content, got[7].Content, got[10].Content)
	}
}

func TestAlternate_MergesRepeatedRoles(t *testing.T) {
	in := []llm.Message{
		{Role: llm.RoleSystem, Content: "s"},
		{Role: llm.RoleUser, Content: "summary"},
		{Role: llm.RoleUser, Content: "prompt", Images: []llm.Image{{Name: "i"}}},
		{Role: llm.RoleAssistant, Content: "a", ToolCalls: []llm.ToolCall{{ID: "c"}}},
		{Role: llm.RoleTool, ToolCallID: "c", Content: "r"},
		{Role: llm.RoleAssistant, Content: "x"},
		{Role: llm.RoleAssistant, Content: "y"},
	}
	want := []llm.Message{
		{Role: llm.RoleSystem, Content: "s"},
		{Role: llm.RoleUser, Content: "summary\n\nprompt", Images: []llm.Image{{Name: "i"}}},
		{Role: llm.RoleAssistant, Content: "a", ToolCalls: []llm.ToolCall{{ID: "c"}}},
		{Role: llm.RoleTool, ToolCallID: "c", Content: "r"},
		{Role: llm.RoleAssistant, Content: "x\n\ny"},
	}
	if diff := cmp.Diff(want, alternate(in)); diff != "" {
		t.Errorf("alternate (-want +got):\n%s", diff)
	}
}
