package agent

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

func usageEvent(t *testing.T, typ string, data any) session.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: typ, Data: b}
}

// PromptResponse.usage adds up what the provider reported for the turn's
// steps, and only those: not the turn before, not an estimate, and
// nothing when no step reported any.
func TestTurnUsage(t *testing.T) {
	step := func(turn, in, out, cached int, estimated bool) session.Event {
		return usageEvent(t, session.TypeStepEnd, session.StepEnd{Turn: turn, Step: 1, Outcome: session.OutcomeOK,
			Usage: &session.StepUsage{Used: uint64(in + out), PromptTokens: in, CompletionTokens: out, CachedTokens: cached, Estimated: estimated}})
	}
	start := func(turn int) session.Event {
		return usageEvent(t, session.TypeTurnStart, session.TurnStart{Turn: turn, Prompt: json.RawMessage(`[]`)})
	}
	failed := usageEvent(t, session.TypeStepEnd, session.StepEnd{Turn: 2, Step: 2, Outcome: session.OutcomeFailed})
	end := usageEvent(t, session.TypeTurnEnd, session.TurnEnd{Turn: 2, StopReason: "end_turn"})
	u := func(in, out uint64, cached *uint64) *acp.Usage {
		return &acp.Usage{TotalTokens: in + out, InputTokens: in, OutputTokens: out, CachedReadTokens: cached}
	}
	c := func(n uint64) *uint64 { return &n }
	for _, tc := range []struct {
		name   string
		events []session.Event
		want   *acp.Usage
	}{
		{"one step", []session.Event{start(1), step(1, 100, 10, 0, false), end}, u(100, 10, nil)},
		{"steps add up, not the turn before", []session.Event{start(1), step(1, 999, 999, 0, false), start(2), step(2, 100, 10, 40, false), failed, step(2, 120, 5, 200, false), end},
			u(220, 15, c(160))},
		{"estimates count for nothing", []session.Event{start(2), step(2, 100, 10, 0, true), end}, nil},
		{"no usage", []session.Event{start(2), failed, end}, nil},
		{"negative counts from a log are not believed", []session.Event{start(2), step(2, -5, 7, -3, false), end}, u(0, 7, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, turnUsage(tc.events, 2)); diff != "" && tc.name != "one step" {
				t.Errorf("turnUsage (-want +got):\n%s", diff)
			}
			if tc.name == "one step" {
				if diff := cmp.Diff(tc.want, turnUsage(tc.events, 1)); diff != "" {
					t.Errorf("turnUsage (-want +got):\n%s", diff)
				}
			}
		})
	}
}
