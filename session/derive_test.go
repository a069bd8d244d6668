package session_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

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
				user(1, "hi"),
				{Turn: 1, Role: session.RoleAssistant, Text: "Hello!", Reasoning: "greet", MessageID: "msg_1", FinishReason: "tool_calls"},
				{Turn: 1, Role: session.RoleAssistant, Text: "Done.", MessageID: "msg_2", FinishReason: "stop"},
				user(2, "again"),
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
				user(1, "hi"),
				{Turn: 1, Role: session.RoleAssistant, Text: "Hello", MessageID: "m2"},
			},
		},
		{
			name: "chunks of a step with no message are ignored",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1,
				rec{session.TypeStepEnd, `{"turn":1,"step":1,"outcome":"cancelled"}`},
				rec{session.TypeTurnEnd, `{"turn":1,"stopReason":"cancelled"}`})),
			want: []session.Message{user(1, "hi")},
		},
		{
			name: "failed turn contributes the user message only",
			events: events(t, render(rStart, rTurn1, rStep1, rChunk1, rStepFail1,
				rec{session.TypeTurnEnd, `{"turn":1,"error":{"code":"SERVER"}}`})),
			want: []session.Message{user(1, "hi")},
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
			if diff := cmp.Diff(tt.want, got); diff != "" {
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
