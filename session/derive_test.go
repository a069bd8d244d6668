package session_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/session"
)

// events parses a fixture log into events.
func events(t *testing.T, log string) []session.Event {
	t.Helper()
	ld, err := session.Parse(strings.NewReader(log), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return ld.Events
}

func user(turn int, text string) session.Message {
	return session.Message{
		Turn: turn, Role: session.RoleUser, Text: text,
		Prompt: json.RawMessage(`[{"type":"text","text":"` + text + `"}]`),
	}
}

func outcome(m session.Message, o string) session.Message {
	m.TurnOutcome = o
	return m
}

func TestConversation_Derive(t *testing.T) {
	fixture, err := session.Load("testdata/two_turns.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		events []session.Event
		want   []session.Message
	}{
		{
			name:   "two turns: failed step, retry, tool call, failed turn",
			events: fixture.Events,
			want: []session.Message{
				outcome(user(1, "hi"), "end_turn"),
				{Turn: 1, Role: session.RoleAssistant, Text: "Hello!", Reasoning: "greet", MessageID: "msg_1", FinishReason: "tool_calls",
					ToolCalls: []session.MessageToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
				{Turn: 1, Role: session.RoleTool, ToolCallID: "call_1", ToolName: "read_file", Arguments: `{"path":"a.txt"}`, Text: "A", Status: "completed",
					Call: &session.ToolCall{Turn: 1, Step: 2, ToolCallID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
				{Turn: 1, Role: session.RoleAssistant, Text: "Done.", MessageID: "msg_2", FinishReason: "stop"},
				outcome(user(2, "again"), session.OutcomeTurnFailed),
			},
		},
		{
			name: "chunks of a failed step are ignored",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1, rStepFail1,
				rec{session.TypeStepStart, `{"turn":1,"step":2}`},
				rec{session.TypeAssistantChunk, `{"turn":1,"step":2,"text":"Hello"}`},
				rec{session.TypeAssistantMessage, `{"turn":1,"step":2,"messageId":"m2","text":"Hello"}`},
				rec{session.TypeStepEnd, `{"turn":1,"step":2,"outcome":"ok"}`},
				rTurnEnd1)),
			want: []session.Message{
				outcome(user(1, "hi"), "end_turn"),
				{Turn: 1, Role: session.RoleAssistant, Text: "Hello", MessageID: "m2"},
			},
		},
		{
			name: "chunks of a step with no message are ignored",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1,
				rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"cancelled"}`},
				rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"cancelled"}`})),
			want: []session.Message{outcome(user(1, "hi"), "cancelled")},
		},
		{
			name: "failed turn contributes the user message only",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1, rStepFail1,
				rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"SERVER"}}`})),
			want: []session.Message{outcome(user(1, "hi"), session.OutcomeTurnFailed)},
		},
		{
			name: "tool calls: a result for each, dispatched or not, and an interrupted turn",
			events: events(t, render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1,
				rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"c1","name":"x","arguments":"{}","title":"X it","kind":"read"}`},
				rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c1","status":"completed","output":"out","content":[{"type":"content"}]}`},
				rec{session.TypeToolResult, `{"turn":1,"toolCallId":"c2","status":"aborted","output":"not run"}`},
				rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"ABORTED"},"interrupted":true}`})),
			want: []session.Message{
				outcome(user(1, "hi"), session.OutcomeTurnInterrupted),
				{Turn: 1, Role: session.RoleAssistant, Text: "Let me look.", MessageID: "m1", FinishReason: "tool_calls",
					ToolCalls: []session.MessageToolCall{{ID: "c1", Name: "x", Arguments: "{}"}, {ID: "c2", Name: "y", Arguments: "{}"}}},
				{Turn: 1, Role: session.RoleTool, ToolCallID: "c1", ToolName: "x", Arguments: "{}", Text: "out", Status: "completed", Content: json.RawMessage(`[{"type":"content"}]`),
					Call: &session.ToolCall{Turn: 1, Step: 1, ToolCallID: "c1", Name: "x", Arguments: "{}", Title: "X it", Kind: "read"}},
				{Turn: 1, Role: session.RoleTool, ToolCallID: "c2", ToolName: "y", Arguments: "{}", Text: "not run", Status: "aborted"},
			},
		},
		{
			name:   "open last turn keeps what it committed",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1, rMessage1)),
			want: []session.Message{
				user(1, "hi"),
				{Turn: 1, Role: session.RoleAssistant, Text: "Hello", MessageID: "m1"},
			},
		},
		{
			name:   "no turns",
			events: events(t, render(rStart)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := session.Conversation(tt.events)
			if err != nil {
				t.Fatal(err)
			}
			// Seq only places a message among what else is replayed
			// (TestWaitStatuses).
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(session.Message{}, "Seq")); diff != "" {
				t.Errorf("Conversation (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConversation_RefusesBrokenEvents(t *testing.T) {
	evs := events(t, render(rStart, rTurn1, rStep1, rMessage1))
	evs = append(evs, evs[3]) // a second message, and a repeated seq
	evs[4].Seq = 5
	_, err := session.Conversation(evs)
	want := &session.InvariantError{Line: 5, Seq: 5, Msg: "second assistant/message for step 1 of turn 1: a step commits at most one"}
	ie, ok := errors.AsType[*session.InvariantError](err)
	if !ok {
		t.Fatalf("err = %v, want an *InvariantError", err)
	}
	if diff := cmp.Diff(want, ie); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestNextTurn_Numbers(t *testing.T) {
	fixture, err := session.Load("testdata/two_turns.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		events []session.Event
		want   int
	}{
		{"no events", nil, 1},
		{"no turns", events(t, render(rStart)), 1},
		{"open turn", events(t, render(rStart, rTurn1, rStep1)), 2},
		{"two turns", fixture.Events, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := session.NextTurn(tt.events); got != tt.want {
				t.Errorf("NextTurn = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPermissionRules_LastAlwaysAnswerWins(t *testing.T) {
	perm := func(id, scope, outcome string) rec {
		return rec{session.TypePermission, `{"turn":1,"toolCallId":"` + id + `","scope":"` + scope + `","outcome":"` + outcome + `"}`}
	}
	call := func(id string) rec {
		return rec{session.TypeToolCall, `{"turn":1,"step":1,"toolCallId":"` + id + `","name":"` + map[string]string{"c1": "x", "c2": "y"}[id] + `","arguments":"{}"}`}
	}
	evs := events(t, render(rStart, rTurn1, rStep1, rMessageCalls1, rStepEnd1,
		call("c1"), perm("c1", "edit_file", "allow_always"), perm("c1", "run_command:make", "reject_always"), perm("c1", "write_file", "allow_once"),
		call("c2"), perm("c2", "edit_file", "reject_always"), perm("c2", "run_command:ls", "cancelled")))
	want := map[string]string{"edit_file": "reject_always", "run_command:make": "reject_always"}
	if diff := cmp.Diff(want, session.PermissionRules(evs)); diff != "" {
		t.Errorf("PermissionRules (-want +got):\n%s", diff)
	}
}

func TestLastConfig_LastValueOfEachOption(t *testing.T) {
	cfg := func(id, value string) rec {
		return rec{session.TypeConfig, `{"configId":"` + id + `","value":"` + value + `"}`}
	}
	evs := events(t, render(rStart, cfg("model", "a"), rTurn1, cfg("thought_level", "high"), cfg("model", "b"), rTurnEnd1, cfg("thought_level", "")))
	for _, tt := range []struct {
		id, want string
		ok       bool
	}{{"model", "b", true}, {"thought_level", "", true}, {"mode", "", false}} {
		if got, ok := session.LastConfig(evs, tt.id); got != tt.want || ok != tt.ok {
			t.Errorf("LastConfig(%q) = %q, %v; want %q, %v", tt.id, got, ok, tt.want, tt.ok)
		}
	}
}

func TestUnfinishedReply_ShownChunksOfTheOpenTurn(t *testing.T) {
	shown := func(step int, text string) rec {
		return rec{session.TypeAssistantChunk, `{"turn":1,"step":` + string(rune('0'+step)) + `,"text":"` + text + `","shown":true,"messageId":"m9"}`}
	}
	tests := []struct {
		name string
		log  string
		want session.Unfinished
		ok   bool
	}{
		{"none: held chunks are not shown", render(rStart, rTurn1, rStep1, rChunk1), session.Unfinished{}, false},
		{"across a failed attempt", render(rStart, rTurn1, rStep1, shown(1, "Hel"), rStepFail1,
			rec{session.TypeStepStart, `{"turn":1,"step":2}`}, shown(2, "lo")), session.Unfinished{Step: 2, MessageID: "m9", Text: "Hello"}, true},
		{"committed: nothing unfinished", render(rStart, rTurn1, rStep1, shown(1, "Hello"), rMessage1), session.Unfinished{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := session.UnfinishedReply(events(t, tt.log))
			if ok != tt.ok || got != tt.want {
				t.Errorf("UnfinishedReply = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestConversation_IncompleteReplyAfterItsStep(t *testing.T) {
	evs := events(t, render(rStart, rTurn1, rStep1, rStepFail1,
		rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m1","text":"Hel","incomplete":true}`},
		rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"SERVER"}}`}))
	got, err := session.Conversation(evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[1].Incomplete || got[1].Text != "Hel" {
		t.Errorf("Conversation = %+v, want the incomplete reply", got)
	}
	// One message per step, incomplete or not.
	bad := render(rStart, rTurn1, rStep1, rMessage1, rStepEnd1,
		rec{session.TypeAssistantMessage, `{"turn":1,"step":1,"messageId":"m2","text":"x","incomplete":true}`})
	if _, err := session.Parse(strings.NewReader(bad), "t.jsonl"); err == nil || !strings.Contains(err.Error(), "a step commits at most one") {
		t.Errorf("a second, incomplete message for a step: err = %v", err)
	}
}

// A compaction recorded failed accounts for its summary request and
// replaces nothing: its message says why and stands for nothing, the turn's recorded local is
// the user message's, and a failed one that claims to replace messages is
// refused.
func TestConversation_FailedCompactionAndLocal(t *testing.T) {
	turn := rec{session.TypeTurnStart, `{"turn":1,"prompt":[{"type":"text","text":"/compact"}],"text":"/compact","local":true}`}
	failed := rec{session.TypeCompaction, `{"turn":1,"step":1,"summary":"","replaced":0,"failed":"the summary did not finish"}`}
	msgs, err := session.Conversation(events(t, render(rStart, turn, rStep1, failed, rStepFail1, rTurnEnd1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != session.RoleUser || msgs[0].Local == nil || !*msgs[0].Local ||
		msgs[1].Role != session.RoleCompaction || msgs[1].Failed != "the summary did not finish" || msgs[1].Replaced != 0 {
		t.Errorf("messages %+v, want the user message, local, and the failed compaction", msgs)
	}
	bad := rec{session.TypeCompaction, `{"turn":1,"step":1,"summary":"s","replaced":2,"failed":"x"}`}
	if _, err := session.Parse(strings.NewReader(render(rStart, turn, rStep1, bad)), "t.jsonl"); err == nil || !strings.Contains(err.Error(), "a failed compaction replaces nothing") {
		t.Errorf("err = %v, want the failed compaction that replaces messages refused", err)
	}
}
