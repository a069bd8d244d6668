package agent

import (
	"testing"

	"github.com/rebound-agent/rebound/acp"
)

// The slash commands alone, on a session without turns: what each asks of
// the turn, without an Agent; /status's answer is the one given.
func TestSlash_OnANewSession(t *testing.T) {
	h := newHistory()
	s := &sessionState{id: "sess_1"}
	tests := []struct {
		prompt  string
		run     string // the text of the prompt run instead
		answer  string
		compact bool
	}{
		{prompt: "hello"},
		{prompt: "/status", answer: "the status"},
		{prompt: "/continue", answer: "Nothing to continue: the last reply was not cut short."},
		{prompt: "/compact", answer: "Nothing to compact: the conversation has no earlier messages yet."},
		{prompt: "/compact now", answer: "`/compact now` is not something Rebound can do: `/compact` takes nothing after it."},
		{prompt: "/retry", answer: nothingToRetry},
		{prompt: "/init", run: initPrompt},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			asked := 0
			status := func() string { asked++; return "the status" }
			run, answer, compact, wait := slash(s, h, []acp.ContentBlock{acp.TextBlock(tt.prompt)}, status)
			got := ""
			if len(run) == 1 {
				got = run[0].Text
			}
			if got != tt.run || len(run) > 1 || answer != tt.answer || compact != tt.compact || wait != nil {
				t.Errorf("slash(%q) = run %q, answer %q, compact %v, wait %v; want run %q, answer %q, compact %v",
					tt.prompt, got, answer, compact, wait, tt.run, tt.answer, tt.compact)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.prompt == "/status"]; asked != want {
				t.Errorf("/status's answer was made %d times, want %d", asked, want)
			}
		})
	}
}
