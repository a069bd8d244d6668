package agent

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
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
	got := toolCalls(append([]llm.ToolCall{{ID: "", Name: ""}}, many...), map[string]bool{})
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

func TestResumer_TrimsWhatWasShown(t *testing.T) {
	const shown = "The quick brown fox jumps over the lazy dog"
	tests := []struct {
		name   string
		shown  string // "" is shown
		chunks []string
		want   string
	}{
		{"a plain continuation", "", []string{" and", " runs."}, " and runs."},
		{"repeats the end", "", []string{"brown fox jumps ", "over the lazy dog and runs."}, " and runs."},
		{"repeats the end in one piece", "", []string{"quick brown fox jumps over the lazy dog and runs."}, " and runs."},
		{"restarts from the beginning", "", []string{"The quick ", "brown fox jumps over", " the lazy dog", " and runs."}, " and runs."},
		{"a restart that stops short", "", []string{"The quick brown fox jumps"}, ""},
		{"a restart too short to be certain is kept", "", []string{"The quick"}, "The quick"},
		{"a short repeat of the end is kept", "", []string{"lazy dog and runs."}, "lazy dog and runs."},
		{"a closing brace is kept", "func f() {\n\tif ok {\n\t\treturn\n\t}\n", []string{"}\n"}, "}\n"},
		{"a closing tag is kept", "<div><div>text</div>", []string{"</div>\n"}, "</div>\n"},
		{"a run of a short unit is kept, however long", "Title\n" + strings.Repeat("=", 40), []string{strings.Repeat("=", 30), "\n"}, strings.Repeat("=", 30) + "\n"},
		{"text found inside the shown text but not at its end", "", []string{"quick thinking"}, "quick thinking"},
		{"rewrites after a common beginning", "", []string{"The quick red fox."}, "The quick red fox."},
		// A start over is anchored at the reply's first character: a short
		// reply of words begun again is trimmed (the editor trial's dropped
		// stream, case f); one that is a closing token or a run is not.
		{"a short reply started over", "The magic word", []string{"The magic ", "word is BANANA."}, " is BANANA."},
		{"a short reply started over that stops short", "The magic word is", []string{"The magic word"}, ""},
		{"a reply that is a closing tag is kept", "</div>", []string{"</div>\n</body>"}, "</div>\n</body>"},
		{"a reply that is a run is kept", "}\n}\n}\n}\n}\n}\n}\n", []string{"}\n}\n}\n}\n}\n}\n}\n}\n"}, "}\n}\n}\n}\n}\n}\n}\n}\n"},
		{"a reply of one word is kept", "Supercalifragilistic", []string{"Supercalifragilistic!"}, "Supercalifragilistic!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &resumer{shown: tt.shown}
			if tt.shown == "" {
				r.shown = shown
			}
			var got strings.Builder
			for _, c := range tt.chunks {
				got.WriteString(r.feed(c))
			}
			got.WriteString(r.finish())
			if got.String() != tt.want {
				t.Errorf("shown after %q: %q, want %q", tt.chunks, got.String(), tt.want)
			}
		})
	}
}

// TestResumer_HoldsBackOnlyWhileItMustDecide: text is released as soon as
// it cannot be a repeat, and never held past the window.
func TestResumer_HoldsBackOnlyWhileItMustDecide(t *testing.T) {
	r := &resumer{shown: "The quick brown fox"}
	if got := r.feed("zebra"); got != "zebra" {
		t.Errorf("a continuation that is no repeat was held back: got %q", got)
	}
	long := strings.Repeat("ab", maxOverlapWindow)
	r = &resumer{shown: "x" + long + "end"}
	if got := r.feed(long[:maxOverlapWindow+2]); got == "" {
		t.Errorf("held back more than the window")
	}
}

func TestOutput_SendsPiecesAtRuneBoundaries(t *testing.T) {
	var o output
	text := strings.Repeat("é", heldPieceBytes) // 2 bytes each: pieces must not split one
	for i := 0; i < len(text); i += 100 {
		o.add("agent_message_chunk", text[i:min(i+100, len(text))])
	}
	o.add("agent_thought_chunk", "think")
	if len(o) != 2 {
		t.Fatalf("%d segments, want 2 (one per run of a kind)", len(o))
	}
	c := &pieces{}
	if err := o.send(t.Context(), c, "s", "m"); err != nil {
		t.Fatal(err)
	}
	var joined strings.Builder
	for i, p := range c.texts[:len(c.texts)-1] {
		if len(p) > heldPieceBytes || !utf8.ValidString(p) {
			t.Errorf("piece %d: %d bytes, valid UTF-8 %v", i, len(p), utf8.ValidString(p))
		}
		joined.WriteString(p)
	}
	if joined.String() != text || c.texts[len(c.texts)-1] != "think" || len(c.texts) != 3 {
		t.Errorf("pieces do not rebuild the text in order: %d pieces", len(c.texts))
	}
}

// pieces is an acp.Client that keeps the text of each update.
type pieces struct {
	acp.Client
	texts []string
}

func (p *pieces) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	p.texts = append(p.texts, u.Content.Text)
	return nil
}

// TestBaseInstructions_FollowTheMode: the system prompt names only the
// tools the mode offers and says what asks permission in it.
func TestBaseInstructions_FollowTheMode(t *testing.T) {
	for _, tt := range []struct {
		mode       string
		mcp        bool
		has, lacks []string
	}{
		{ModeAsk, false, []string{"edit_file", "run_command", "asked before every edit, write and command"}, []string{"MCP"}},
		{ModeAsk, true, []string{"mcp__<server>__<tool>", "command and MCP tool call"}, nil},
		{ModeAcceptEdits, false, []string{"made without asking", "before every command,"}, []string{"MCP"}},
		{ModeFullAccess, true, []string{"Nothing asks", "mcp__"}, []string{"may decline"}},
		{ModeReadOnly, true, []string{"read_file", "search_files", "read-only"}, []string{"edit_file", "write_file", "run_command", "mcp__"}},
	} {
		got := baseInstructions(tt.mode, tt.mcp)
		for _, s := range tt.has {
			if !strings.Contains(got, s) {
				t.Errorf("%s (mcp %v): no %q in\n%s", tt.mode, tt.mcp, s, got)
			}
		}
		for _, s := range tt.lacks {
			if strings.Contains(got, s) {
				t.Errorf("%s (mcp %v): %q in\n%s", tt.mode, tt.mcp, s, got)
			}
		}
	}
}
