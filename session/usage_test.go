package session_test

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

func jsonOf(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// UsageFill, for random runs of step/ends (with and without usage, failed
// with facts), compactions (done, failed, broken) and other events, each
// added with its typed data (a value or a pointer) or without it (as a
// load adds them), agrees after every event with the plain reading: the
// usage of the last step/end that recorded one, current unless a
// compaction that replaced something (or does not decode) came after it.
func TestUsageFill_Property(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for run := range 300 {
		var f session.UsageFill
		var want *session.StepUsage
		stale := false
		for i := range 1 + r.IntN(20) {
			var ev session.Event
			var typed, ptr any
			switch r.IntN(5) {
			case 0, 1:
				d := session.StepEnd{Turn: 1, Step: i + 1, Outcome: session.OutcomeOK}
				if r.IntN(3) > 0 {
					d.Usage = &session.StepUsage{Used: uint64(r.IntN(1000)), Size: 1000}
					want, stale = d.Usage, false
				} else {
					d.Outcome, d.Failure = session.OutcomeFailed, json.RawMessage(`{"code":"SERVER","message":"no usage"}`)
				}
				ev, typed, ptr = session.Event{Type: session.TypeStepEnd, Data: jsonOf(t, d)}, d, &d
			case 2:
				d := session.Compaction{Turn: 1, Summary: "s", Replaced: 2}
				if r.IntN(2) == 0 {
					d = session.Compaction{Turn: 1, Failed: "the summary did not finish"}
				} else {
					stale = true
				}
				ev, typed, ptr = session.Event{Type: session.TypeCompaction, Data: jsonOf(t, d)}, d, &d
			case 3:
				ev = session.Event{Type: session.TypeCompaction, Data: json.RawMessage(`"not an object"`)}
				stale = true
			default:
				ev = session.Event{Type: session.TypeStatus, Data: json.RawMessage(`{"usage":{"used":5}}`)}
			}
			switch r.IntN(3) {
			case 0:
				f.Add(ev, nil)
			case 1:
				f.Add(ev, typed)
			default:
				f.Add(ev, ptr)
			}
			if r.IntN(3) == 0 { // asked between adds, as a prompt asks
				checkFill(t, run, &f, want, stale)
			}
		}
		checkFill(t, run, &f, want, stale)
	}
}

func checkFill(t *testing.T, run int, f *session.UsageFill, want *session.StepUsage, stale bool) {
	t.Helper()
	got := f.Last()
	if (got == nil) != (want == nil) || got != nil && *got != *want {
		t.Fatalf("run %d: Last() = %+v, want %+v", run, got, want)
	}
	used, known := f.Used()
	if wantKnown := want != nil && !stale; known != wantKnown || known && used != want.Used {
		t.Fatalf("run %d: Used() = %d, %v; want %v (stale %v)", run, used, known, wantKnown, stale)
	}
}

// LastUsage reads a whole log as UsageFill does, from the log's bytes.
func TestLastUsage_OfALog(t *testing.T) {
	u := &session.StepUsage{Used: 700, Size: 1000}
	evs := []session.Event{
		{Type: session.TypeStepEnd, Data: jsonOf(t, session.StepEnd{Turn: 1, Step: 1, Outcome: session.OutcomeOK, Usage: u})},
		{Type: session.TypeStepEnd, Data: jsonOf(t, session.StepEnd{Turn: 1, Step: 2, Outcome: session.OutcomeFailed})},
	}
	if got, current := session.LastUsage(evs); got == nil || got.Used != 700 || !current {
		t.Fatalf("LastUsage = %+v, %v; want the 700-token usage, current", got, current)
	}
	evs = append(evs, session.Event{Type: session.TypeCompaction, Data: jsonOf(t, session.Compaction{Turn: 1, Summary: "s"})})
	if got, current := session.LastUsage(evs); got == nil || got.Used != 700 || current {
		t.Fatalf("after a compaction LastUsage = %+v, %v; want the 700-token usage, not current", got, current)
	}
	if got, current := session.LastUsage(nil); got != nil || current {
		t.Fatalf("LastUsage of nothing = %+v, %v", got, current)
	}
}

// ToolCallIDs: every call of every assistant/message, and nothing else;
// FirstTurnStart: the first turn/start only, refused when it is broken.
func TestToolCallIDsAndFirstTurnStart(t *testing.T) {
	msg := func(ids ...string) session.Event {
		m := session.AssistantMessage{Turn: 1, Step: 1}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, session.MessageToolCall{ID: id, Name: "read_file"})
		}
		return session.Event{Type: session.TypeAssistantMessage, Data: jsonOf(t, m)}
	}
	start := func(turn int, text string) session.Event {
		return session.Event{Type: session.TypeTurnStart, Data: jsonOf(t, session.TurnStart{Turn: turn, Text: text})}
	}
	evs := []session.Event{
		start(1, "first"), msg("a", "b"),
		{Type: session.TypeToolCall, Data: jsonOf(t, session.ToolCall{Turn: 1, ToolCallID: "not-a-message's"})},
		start(2, "second"), msg(), msg("c"),
		{Type: session.TypeAssistantMessage, Data: json.RawMessage(`[1]`)},
	}
	ids := session.ToolCallIDs(evs)
	if len(ids) != 3 || !ids["a"] || !ids["b"] || !ids["c"] {
		t.Errorf("ToolCallIDs = %v, want a, b and c", ids)
	}
	if d, ok := session.FirstTurnStart(evs); !ok || d.Turn != 1 || d.Text != "first" {
		t.Errorf("FirstTurnStart = %+v, %v; want turn 1's", d, ok)
	}
	if _, ok := session.FirstTurnStart(evs[1:3]); ok {
		t.Error("FirstTurnStart found a turn/start in a log without one")
	}
	broken := append([]session.Event{{Type: session.TypeTurnStart, Data: json.RawMessage(`"x"`)}}, evs...)
	if d, ok := session.FirstTurnStart(broken); ok {
		t.Errorf("FirstTurnStart of a log whose first turn/start is broken = %+v, want none (not the second)", d)
	}
}
