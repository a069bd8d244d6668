package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
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
		{[]acp.ContentBlock{acp.TextBlock("/continue")}, "continue", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/compact")}, "compact", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/continue: Continue your last reply")}, "", "", false}, // /continue's own prompt
		{[]acp.ContentBlock{acp.TextBlock("/frobnicate")}, "", "", false},
		// agent-shell appends the region it was started from (seen in its trace)
		{[]acp.ContentBlock{acp.TextBlock("/status\n\nnotes.txt:1-1\n\nThe colour of the sky.")}, "status", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/init: Survey this project")}, "", "", false}, // /init's own prompt
		{[]acp.ContentBlock{acp.TextBlock("please /retry")}, "", "", false},
		{[]acp.ContentBlock{{Type: "image"}, acp.TextBlock("/retry")}, "", "", false},
		{nil, "", "", false},
		// A blank first block carries nothing: the command is the next one.
		{[]acp.ContentBlock{acp.TextBlock(""), acp.TextBlock("/status")}, "status", "", true},
		{[]acp.ContentBlock{acp.TextBlock(" \n"), acp.TextBlock(""), acp.TextBlock("/retry wait")}, "retry", "wait", true},
		{[]acp.ContentBlock{acp.TextBlock(""), {Type: "image"}, acp.TextBlock("/retry")}, "", "", false},
		{[]acp.ContentBlock{acp.TextBlock(""), acp.TextBlock("hello"), acp.TextBlock("/status")}, "", "", false},
		{[]acp.ContentBlock{acp.TextBlock(""), acp.TextBlock(" ")}, "", "", false},
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

// answered is the text of the agent_message_chunk updates e was sent.
func answered(e *editor) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var b strings.Builder
	for _, u := range e.updates {
		if u.SessionUpdate == acp.UpdateAgentMessageChunk && u.Content != nil {
			b.WriteString(u.Content.Text)
		}
	}
	return b.String()
}

func slashPrompt(t *testing.T, a *Agent, id, text string) (acp.PromptResponse, string) {
	t.Helper()
	e := &editor{}
	resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}}, e)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	return resp, answered(e)
}

// TestSlashContinue: /continue runs a turn asking the model to go on from
// a reply committed incomplete (live, cut by a failure); with nothing cut
// short it answers so and asks nobody.
func TestSlashContinue(t *testing.T) {
	cut := func(context.Context, llm.Request) (llm.Stream, error) {
		sent := false
		return funcStream(func() (llm.Chunk, error) {
			if !sent {
				sent = true
				return llm.Chunk{Content: "Once upon"}, nil
			}
			return llm.Chunk{}, &llm.Error{Status: 400, Code: "invalid_value", Message: "bad"}
		}), nil
	}
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){cut, text(" a time.")}}
	a := testAgent(t, Config{Provider: p, Live: true})
	id := newSession(t, a)
	if resp, got := slashPrompt(t, a, id, "/continue"); resp.StopReason != acp.StopEndTurn || !strings.HasPrefix(got, "Nothing to continue") || p.count() != 0 {
		t.Fatalf("/continue before any turn = %v %q after %d requests", resp, got, p.count())
	}
	if _, err := ask(t.Context(), a, id, "Tell a story"); err == nil {
		t.Fatal("the cut turn did not fail")
	}
	if resp, got := slashPrompt(t, a, id, "/continue"); resp.StopReason != acp.StopEndTurn || got != " a time." {
		t.Fatalf("/continue = %v %q", resp, got)
	}
	msgs := p.reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Content != continuePromptText {
		t.Errorf("the continuation's prompt = %q", last.Content)
	}
	if prev := msgs[len(msgs)-2]; prev.Role != llm.RoleAssistant || !strings.HasPrefix(prev.Content, "Once upon") {
		t.Errorf("the continuation's request does not carry the incomplete reply: %+v", prev)
	}
	if resp, got := slashPrompt(t, a, id, "/continue"); resp.StopReason != acp.StopEndTurn || !strings.HasPrefix(got, "Nothing to continue") || p.count() != 2 {
		t.Errorf("/continue after a complete reply = %v %q after %d requests", resp, got, p.count())
	}
}

// TestSlashCompact: /compact summarises the history with one request and
// the next turn carries the summary; with no history it asks nobody.
func TestSlashCompact(t *testing.T) {
	long := strings.Repeat("A long answer. ", 20)
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("A1. " + long), text("A2. " + long), text("They talked."), text("A3.")}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	if _, got := slashPrompt(t, a, id, "/compact"); !strings.HasPrefix(got, "Nothing to compact") || p.count() != 0 {
		t.Fatalf("/compact of nothing = %q after %d requests", got, p.count())
	}
	for _, q := range []string{"Q1", "Q2"} {
		if _, err := ask(t.Context(), a, id, q); err != nil {
			t.Fatal(err)
		}
	}
	// Both turns: 4 messages, none kept. The first /compact's exchange is
	// not the model's: it never sees a command Rebound answered itself.
	if resp, got := slashPrompt(t, a, id, "/compact"); resp.StopReason != acp.StopEndTurn || got != "Compacted 4 messages into a summary." {
		t.Fatalf("/compact = %v %q", resp, got)
	}
	if sys := p.reqs[2].Messages[0].Content; sys != summariseInstruction {
		t.Errorf("the third request is not the summary's: %q", sys)
	}
	if _, err := ask(t.Context(), a, id, "Q3"); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, m := range p.reqs[3].Messages[1:] {
		all.WriteString(m.Content + "\n")
	}
	if s := all.String(); !strings.Contains(s, "They talked.") || strings.Contains(s, "A1.") {
		t.Errorf("the next turn's request does not carry the summary instead of the history:\n%s", s)
	}
	mustLoad(t, a, id)
}

func TestTurnRecovery(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	seq := int64(0)
	ev := func(at time.Duration, typ string, data any) session.Event {
		d, _ := json.Marshal(data)
		seq++
		return session.Event{Seq: seq, Time: start.Add(at), Type: typ, Data: d}
	}
	retry := func(at time.Duration, turn, n int, code, action string, delayMs int64) session.Event {
		fail, _ := json.Marshal(map[string]any{"code": code})
		return ev(at, session.TypeLLMRetry, session.LLMRetry{Turn: turn, RetryID: fmt.Sprint("r", turn), Retry: n, DelayMs: delayMs, Action: action, Failure: fail})
	}
	started := func(at time.Duration, turn, n int) session.Event {
		return ev(at, session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: turn, RetryID: fmt.Sprint("r", turn), Retry: n})
	}
	s := time.Second
	events := []session.Event{
		ev(0, session.TypeTurnStart, session.TurnStart{Turn: 1}),
		retry(0, 1, 1, "OVERLOADED", "", 9000), started(9*s, 1, 1), // another turn's
		ev(10*s, session.TypeTurnEnd, session.TurnEnd{Turn: 1}),
		ev(20*s, session.TypeTurnStart, session.TurnStart{Turn: 2}),
		retry(20*s, 2, 1, "RATE_LIMIT", "", 2000), started(22*s, 2, 1),
		retry(23*s, 2, 2, "RATE_LIMIT", "", 1500), started(24500*time.Millisecond, 2, 2),
		retry(25*s, 2, 3, "CONTEXT_OVERFLOW", "compact", 0), started(25*s, 2, 3),
		// Planned for 20 hours, cancelled after one second: one second.
		retry(26*s, 2, 4, "RATE_LIMIT", "", (20 * time.Hour).Milliseconds()),
		ev(27*s, session.TypeTurnEnd, session.TurnEnd{Turn: 2, StopReason: "cancelled"}),
		ev(30*s, session.TypeTurnStart, session.TurnStart{Turn: 3}),
		retry(30*s, 3, 1, "SERVER", "", 5000), // Rebound stopped during the wait
		ev(90*s, session.TypeTurnEnd, session.TurnEnd{Turn: 3, Interrupted: true}),
	}
	got := turnRecovery(events, 2)
	want := "Rebound made 4 retries (RATE_LIMIT ×3, CONTEXT_OVERFLOW ×1), waiting 4.5s in all; what it changed: compact; then you cancelled."
	if got != want {
		t.Errorf("turnRecovery = %q\nwant %q", got, want)
	}
	if got, want := turnRecovery(events, 3), "Rebound made 1 retry (SERVER ×1), waiting 0s in all (and 1 wait cut short when Rebound stopped); then Rebound stopped."; got != want {
		t.Errorf("an interrupted wait: %q\nwant %q", got, want)
	}
	if got := turnRecovery(events, 4); got != "" {
		t.Errorf("a turn without retries: %q, want nothing", got)
	}
}

// A command Rebound answered itself is the user's and Rebound's: the model
// never sees it, or its answer, in a later turn's history, also after the
// session is loaded again.
func TestSlashAnswersStayOutOfTheModelsHistory(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("A1."), text("A2."), text("A3.")}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	if _, err := ask(t.Context(), a, id, "Q1"); err != nil {
		t.Fatal(err)
	}
	if _, got := slashPrompt(t, a, id, "/status"); !strings.Contains(got, "Model:") {
		t.Fatalf("/status answered %q", got)
	}
	if _, got := slashPrompt(t, a, id, "/continue"); !strings.HasPrefix(got, "Nothing to continue") {
		t.Fatalf("/continue answered %q", got)
	}
	if _, err := ask(t.Context(), a, id, "Q2"); err != nil {
		t.Fatal(err)
	}
	roles := func(msgs []llm.Message) (out []string) {
		for _, m := range msgs[1:] {
			out = append(out, string(m.Role)+": "+m.Content)
		}
		return out
	}
	want := []string{"user: Q1", "assistant: A1.", "user: Q2"}
	if got := roles(p.reqs[1].Messages); !slices.Equal(got, want) {
		t.Errorf("the model got %q, want %q", got, want)
	}
	mustLoad(t, a, id)
	if _, err := ask(t.Context(), a, id, "Q3"); err != nil {
		t.Fatal(err)
	}
	want = []string{"user: Q1", "assistant: A1.", "user: Q2", "assistant: A2.", "user: Q3"}
	if got := roles(p.reqs[2].Messages); !slices.Equal(got, want) {
		t.Errorf("after a load the model got %q, want %q", got, want)
	}
}
