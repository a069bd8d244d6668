package agent

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

func TestSlashCommandParse(t *testing.T) {
	cases := []struct {
		prompt     []acp.ContentBlock
		name, args string
		ok         bool
	}{
		{[]acp.ContentBlock{acp.TextBlock("/retry")}, "retry", "", true},
		{[]acp.ContentBlock{acp.TextBlock("  /status\n")}, "status", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/retry  wait ")}, "retry", "wait", true},
		{[]acp.ContentBlock{acp.TextBlock("/frobnicate")}, "", "", false},
		// agent-shell appends the region it was started from (seen in its trace)
		{[]acp.ContentBlock{acp.TextBlock("/status\n\nnotes.txt:1-1\n\nThe colour of the sky.")}, "status", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/init: Survey this project")}, "", "", false}, // /init's own prompt
		{[]acp.ContentBlock{acp.TextBlock("please /retry")}, "", "", false},
		{[]acp.ContentBlock{{Type: "image"}, acp.TextBlock("/retry")}, "", "", false},
		{nil, "", "", false},
	}
	for _, c := range cases {
		name, args, ok := slashCommand(c.prompt)
		if name != c.name || args != c.args || ok != c.ok {
			t.Errorf("slashCommand(%+v) = %q, %q, %v; want %q, %q, %v", c.prompt, name, args, ok, c.name, c.args, c.ok)
		}
	}
}

func TestTurnFailureBounded(t *testing.T) {
	long := strings.Repeat("x", 10*maxStatusFailure)
	fail, _ := json.Marshal(map[string]any{"code": "RATE_LIMITED", "status": 429, "message": long})
	end, _ := json.Marshal(session.TurnEnd{Turn: 2, Error: fail})
	ok, _ := json.Marshal(session.TurnEnd{Turn: 3, StopReason: "end_turn"})
	events := []session.Event{{Type: session.TypeTurnEnd, Data: end}, {Type: session.TypeTurnEnd, Data: ok}}
	got := turnFailure(events, 2)
	if !strings.HasPrefix(got, "The failure (RATE_LIMITED, HTTP 429): xxx") || len(got) > maxStatusFailure+100 {
		t.Errorf("turnFailure = %q (%d bytes)", got[:min(len(got), 80)], len(got))
	}
	if got := turnFailure(events, 3); got != "" {
		t.Errorf("a turn that ended well has no failure, got %q", got)
	}
}

// TestSessionAnswered_OffersCommands: every answer is followed by the slash
// commands, sent before SessionAnswered returns (the answer is queued
// first, so they come after it), whether or not a model list is owed.
func TestSessionAnswered_OffersCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &lister{wait: time.Second, answers: []func() ([]string, error){models("b", "a")}}
		a := testAgent(t, Config{Provider: p, Models: []string{"local"}})
		res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		c := &sessionUpdates{}
		a.SessionAnswered(t.Context(), res.SessionID, c)
		c.mu.Lock()
		got := slices.Clone(c.commands)
		c.mu.Unlock()
		if len(got) != 1 || got[0] != res.SessionID {
			t.Errorf("slash commands sent to %v, want once to %s", got, res.SessionID)
		}
		time.Sleep(time.Second)
		synctest.Wait()
	})
}
