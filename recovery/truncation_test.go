package recovery_test

import (
	"testing"

	"github.com/rebound-agent/rebound/recovery"
)

func TestTruncation_Decide(t *testing.T) {
	p := recovery.Truncation{EscalatedMaxTokens: 1000, MaxContinuations: 2}
	escalate := recovery.CutStep{Action: recovery.ActionEscalate, Policy: recovery.PolicyTruncation, N: 1, Max: 1, MaxTokens: 1000}
	cont := func(n, maxTokens int) recovery.CutStep {
		return recovery.CutStep{Action: recovery.ActionContinue, Policy: recovery.PolicyContinuation, N: n, Max: 2, MaxTokens: maxTokens}
	}
	tests := []struct {
		name string
		cut  recovery.Cut
		want recovery.CutStep
	}{
		{"first cut, nothing shown: retried larger, discarded", recovery.Cut{MaxTokens: 100}, escalate},
		{"no budget set: retried with the escalated one", recovery.Cut{}, escalate},
		{"budget already as large: continued", recovery.Cut{MaxTokens: 1000}, cont(1, 1000)},
		{"already escalated this turn: continued", recovery.Cut{MaxTokens: 1000, Escalated: true}, cont(1, 1000)},
		{"a kept part: continued, never escalated", recovery.Cut{MaxTokens: 100, Continued: 1}, cont(2, 100)},
		{"continuations used up: committed", recovery.Cut{MaxTokens: 100, Continued: 2}, recovery.CutStep{MaxTokens: 100}},
		{"shown: continued with the larger budget", recovery.Cut{Shown: true, MaxTokens: 100}, cont(1, 1000)},
		{"shown, budget larger already: kept", recovery.Cut{Shown: true, MaxTokens: 4000}, cont(1, 4000)},
		{"shown, continuations used up: committed", recovery.Cut{Shown: true, MaxTokens: 1000, Continued: 2}, recovery.CutStep{MaxTokens: 1000}},
	}
	for _, tt := range tests {
		if got := p.Decide(tt.cut); got != tt.want {
			t.Errorf("%s: Decide(%+v) = %+v, want %+v", tt.name, tt.cut, got, tt.want)
		}
	}
	if got := (recovery.Truncation{EscalatedMaxTokens: 1000}).Decide(recovery.Cut{MaxTokens: 1000}); got.Action != recovery.ActionNone {
		t.Errorf("no continuations configured: %+v, want the reply committed", got)
	}
}
