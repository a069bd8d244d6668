package agent

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
)

// Property: whatever a turn held (a reply's text or none, tool calls,
// thoughts, a reply cut short) and however it ended, a replay puts a line
// of text between its prompt and the next: codecompanion's restore draws
// only text, and joins two prompts with nothing but cards between them.
func TestReplay_PromptsKeptApartByText(t *testing.T) {
	outcomes := []string{"end_turn", "cancelled", session.OutcomeTurnFailed, session.OutcomeTurnInterrupted, "max_turn_requests"}
	ws := tools.NewWorkspace(t.TempDir())
	r := rand.New(rand.NewPCG(3, 30))
	for i := range 300 {
		var msgs []session.Message
		seq := int64(0)
		next := func() int64 { seq++; return seq }
		turns := 2 + r.IntN(3)
		for turn := 1; turn <= turns; turn++ {
			msgs = append(msgs, session.Message{Seq: next(), Turn: turn, Role: session.RoleUser, Text: "prompt", TurnOutcome: outcomes[r.IntN(len(outcomes))]})
			for range r.IntN(4) {
				switch r.IntN(4) {
				case 0: // a reply with text, maybe cut
					msgs = append(msgs, session.Message{Seq: next(), Turn: turn, Role: session.RoleAssistant, Text: "some text", Incomplete: r.IntN(3) == 0})
				case 1: // a reply of tool calls alone, maybe with thoughts
					m := session.Message{Seq: next(), Turn: turn, Role: session.RoleAssistant, ToolCalls: []session.MessageToolCall{{ID: "c1", Name: "read_file"}}}
					if r.IntN(2) == 0 {
						m.Reasoning = "thinking"
					}
					msgs = append(msgs, m)
				case 2:
					msgs = append(msgs, session.Message{Seq: next(), Turn: turn, Role: session.RoleTool, ToolCallID: "c1", ToolName: "read_file", Status: session.ToolCompleted})
				default: // a reply that said nothing
					msgs = append(msgs, session.Message{Seq: next(), Turn: turn, Role: session.RoleAssistant, Reasoning: "thinking only", ToolCalls: []session.MessageToolCall{{ID: "c2", Name: "list_files"}}})
				}
			}
		}
		e := &editor{}
		if err := replay(t.Context(), e, "sess_1", ws, msgs, nil, true); err != nil {
			t.Fatal(err)
		}
		prompts, apart := 0, true
		var drawn []string
		for _, u := range e.updates {
			switch {
			case u.SessionUpdate == acp.UpdateUserMessageChunk:
				if prompts > 0 && !apart {
					t.Fatalf("case %d: prompt %d follows the one before with no text between them; shown: %q", i, prompts+1, drawn)
				}
				prompts++
				apart = false
				drawn = append(drawn, "prompt")
			case u.SessionUpdate == acp.UpdateAgentMessageChunk && u.Content != nil && strings.TrimSpace(u.Content.Text) != "":
				apart = true
				drawn = append(drawn, u.Content.Text)
			default:
				drawn = append(drawn, string(u.SessionUpdate))
			}
		}
		if prompts != turns {
			t.Fatalf("case %d: %d prompts replayed, want %d", i, prompts, turns)
		}
	}
}
