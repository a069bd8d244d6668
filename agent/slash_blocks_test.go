package agent

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

func texts(ts ...string) []acp.ContentBlock {
	out := make([]acp.ContentBlock, len(ts))
	for i, s := range ts {
		out[i] = acp.TextBlock(s)
	}
	return out
}

// loadedModel is the model's history of session id as another process
// derives it from the log (session/load).
func loadedModel(t *testing.T, a *Agent, id string) []llm.Message {
	t.Helper()
	b := testAgent(t, Config{StateDir: a.cfg.StateDir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("unused")}}})
	if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, &editor{}); err != nil {
		t.Fatal(err)
	}
	return liveModel(t, b, id)
}

// liveModel is the model's history of session id as a keeps it.
func liveModel(t *testing.T, a *Agent, id string) []llm.Message {
	t.Helper()
	s, err := a.store.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.history()
	if err != nil {
		t.Fatal(err)
	}
	return h.model()
}

// lastTurnStart is the last turn/start of events.
func lastTurnStart(t *testing.T, events []session.Event) session.TurnStart {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeTurnStart {
			var d session.TurnStart
			if err := json.Unmarshal(events[i].Data, &d); err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("no turn/start")
	return session.TurnStart{}
}

// #29.7: a prompt whose first block is blank and whose second is /status
// is /status: answered by Rebound, recorded so (local), never sent to the
// model and never in its history, live or after a load. (It used to go to
// the model and then be dropped from the history, because "answered
// locally" was judged again from the rendered text, "/status".)
func TestSlash_BlankFirstBlockIsTheCommand(t *testing.T) {
	for _, prompt := range [][]acp.ContentBlock{texts("", "/status"), texts(" \n\t", "/status"), texts("", "", "/status")} {
		t.Run(fmt.Sprintf("%q", renderPrompt(prompt)), func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("A1."), text("A2.")}}
			a := testAgent(t, Config{Provider: p})
			id := newSession(t, a)
			if _, err := ask(t.Context(), a, id, "Q1"); err != nil {
				t.Fatal(err)
			}
			e := &editor{}
			if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: prompt}, e); err != nil {
				t.Fatal(err)
			}
			if got := answered(e); !strings.Contains(got, "Model: m") || p.count() != 1 {
				t.Fatalf("answered %q after %d requests, want /status's answer and no request", got, p.count())
			}
			if d := lastTurnStart(t, mustLoad(t, a, id)); d.Local == nil || !*d.Local {
				t.Errorf("turn/start local = %v, want true", d.Local)
			}
			if _, err := ask(t.Context(), a, id, "Q2"); err != nil {
				t.Fatal(err)
			}
			want := []string{"user: Q1", "assistant: A1.", "user: Q2"}
			if got := roles(p.reqs[1].Messages[1:]); !reflect.DeepEqual(got, want) {
				t.Errorf("the model got %q, want %q", got, want)
			}
			live := liveModel(t, a, id)
			if diff := cmp.Diff(live, loadedModel(t, a, id)); diff != "" {
				t.Errorf("history (-live +loaded):\n%s", diff)
			}
		})
	}
}

func roles(msgs []llm.Message) (out []string) {
	for _, m := range msgs {
		out = append(out, string(m.Role)+": "+m.Content)
	}
	return out
}

// cancelled runs prompt as a turn that the provider never answers and the
// person cancels (in a synctest bubble).
func cancelled(t *testing.T, a *Agent, id string, prompt []acp.ContentBlock) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan acp.PromptResponse)
	go func() {
		resp, _ := a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: prompt}, &editor{})
		done <- resp
	}()
	synctest.Wait()
	cancel()
	if resp := <-done; resp.StopReason != acp.StopCancelled {
		t.Fatalf("the turn ended %q, want cancelled", resp.StopReason)
	}
}

// #29.7, codecompanion.nvim: after a cancel it sends the cancelled prompt
// again, with what the person typed next as the last block. /retry there
// runs the cancelled turn again (the model gets the prompt, not the prompt
// followed by "/retry"), also after a second cancel ([prompt, /retry,
// /retry]); /status there is answered by Rebound, and neither it nor the
// re-sent prompt reaches the model or its history, live or after a load.
// The same blocks after a turn that went well, or a last block that follows
// something else, go to the model as they are.
func TestSlash_CodecompanionResendsTheCancelledPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		poem := acp.TextBlock("Write a poem")
		ctxFile := acp.ContentBlock{Type: "resource_link", URI: "file:///p/notes.txt", Name: "notes.txt"}
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){stall, stall, text("A poem."), text("Ok."), text("Fine.")}}
		a := testAgent(t, Config{Provider: p})
		id := newSession(t, a)
		cancelled(t, a, id, []acp.ContentBlock{poem, ctxFile})

		// /status after the cancel: Rebound's answer, nobody asked.
		e := &editor{}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{poem, ctxFile, acp.TextBlock("/status")}}, e); err != nil {
			t.Fatal(err)
		}
		if got := answered(e); !strings.Contains(got, "Last turn (1) was cancelled.") || p.count() != 1 {
			t.Fatalf("/status answered %q after %d requests, want the status and no request", got, p.count())
		}
		if d := lastTurnStart(t, mustLoad(t, a, id)); d.Local == nil || !*d.Local {
			t.Errorf("/status's turn/start local = %v, want true", d.Local)
		}

		// /retry: cancelled again, then /retry after [prompt, /retry].
		cancelled(t, a, id, []acp.ContentBlock{poem, ctxFile, acp.TextBlock("/retry")})
		if last := p.reqs[1].Messages[len(p.reqs[1].Messages)-1]; last.Content != renderPrompt([]acp.ContentBlock{poem, ctxFile}) {
			t.Errorf("/retry sent %q, want the cancelled prompt", last.Content)
		}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{poem, ctxFile, acp.TextBlock("/retry"), acp.TextBlock("/retry")}}, &editor{}); err != nil {
			t.Fatal(err)
		}
		if last := p.reqs[2].Messages[len(p.reqs[2].Messages)-1]; last.Content != renderPrompt([]acp.ContentBlock{poem, ctxFile}) {
			t.Errorf("the second /retry sent %q, want the cancelled prompt", last.Content)
		}

		// After a turn that went well the same shape is the model's.
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{poem, ctxFile, acp.TextBlock("/status")}}, &editor{}); err != nil {
			t.Fatal(err)
		}
		// And so is a command after blocks that are not the last prompt.
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: texts("Something else", "/status")}, &editor{}); err != nil {
			t.Fatal(err)
		}
		if p.count() != 5 {
			t.Fatalf("%d requests, want 5 (two cancelled, the retry, two prompts)", p.count())
		}
		want := []string{
			"user: Write a poem\n[@notes.txt](file:///p/notes.txt)", "assistant: (The user cancelled this turn before it finished.)",
			"user: Write a poem\n[@notes.txt](file:///p/notes.txt)", "assistant: (The user cancelled this turn before it finished.)",
			"user: Write a poem\n[@notes.txt](file:///p/notes.txt)", "assistant: A poem.",
			"user: Write a poem\n[@notes.txt](file:///p/notes.txt)\n/status", "assistant: Ok.",
			"user: Something else\n/status", "assistant: Fine.",
		}
		live := liveModel(t, a, id)
		if got := roles(live); !reflect.DeepEqual(got, want) {
			t.Errorf("the model's history:\n%q\nwant\n%q", got, want)
		}
		if diff := cmp.Diff(live, loadedModel(t, a, id)); diff != "" {
			t.Errorf("history (-live +loaded):\n%s", diff)
		}
	})
}

// An old log's turn/start has no local: it was answered locally exactly
// when its recorded blocks were a command by the rule of that time (its
// first block), which is what that version decided on those blocks; a
// recorded local is read as it is, whatever the prompt looks like.
func TestAnsweredLocally(t *testing.T) {
	yes, no := true, false
	raw := func(blocks ...acp.ContentBlock) json.RawMessage { b, _ := json.Marshal(blocks); return b }
	cases := []struct {
		name string
		m    session.Message
		want bool
	}{
		{"old /status", session.Message{Prompt: raw(acp.TextBlock("/status")), Text: "/status"}, true},
		{"old /status with context", session.Message{Prompt: raw(acp.TextBlock("/status\nregion"), acp.TextBlock("more")), Text: "/status\nregion\nmore"}, true},
		// The bug's shape in an old log: that version sent it to the model.
		{"old blank then /status", session.Message{Prompt: raw(acp.TextBlock(""), acp.TextBlock("/status")), Text: "/status"}, false},
		{"old prompt", session.Message{Prompt: raw(acp.TextBlock("hello")), Text: "hello"}, false},
		{"old /init's prompt", session.Message{Prompt: raw(acp.TextBlock(initPrompt)), Text: initPrompt}, false},
		{"old, blocks unreadable", session.Message{Prompt: json.RawMessage(`"x"`), Text: "/compact"}, true},
		{"recorded local", session.Message{Prompt: raw(acp.TextBlock("Write a poem"), acp.TextBlock("/status")), Text: "Write a poem\n/status", Local: &yes}, true},
		{"recorded not local", session.Message{Prompt: raw(acp.TextBlock("/status")), Text: "/status", Local: &no}, false},
	}
	for _, c := range cases {
		if got := answeredLocally(c.m); got != c.want {
			t.Errorf("%s: answeredLocally = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSlashPrompts_HistoryKeepsWhatTheModelWasSent: random prompts of
// several blocks (blank and white-space blocks, commands in any block,
// text that merely looks like one, re-sends of the last prompt as
// codecompanion makes them) against a provider that answers, fails or
// stalls until cancelled. After every prompt: the turn recorded whether
// Rebound answered it (local) exactly when the model was not asked; a
// prompt the model was sent is in its history and one it was not sent is
// not; the history kept equals the one derived from the log; and at the
// end another process that loads the session derives the same history.
//
//	go test ./agent -run TestSlashPrompts_HistoryKeepsWhatTheModelWasSent -slash.seeds 200
func TestSlashPrompts_HistoryKeepsWhatTheModelWasSent(t *testing.T) {
	for seed := range uint64(*slashSeeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runSlashProperty(t, seed, 16) })
		})
	}
}

var slashSeeds = flag.Int("slash.seeds", 6, "sessions TestSlashPrompts_HistoryKeepsWhatTheModelWasSent runs")

func runSlashProperty(t *testing.T, seed uint64, prompts int) {
	r := rand.New(rand.NewPCG(seed, 29))
	// Each model request (a summary's too) is answered, fails for good or
	// stalls until the turn is cancelled.
	answer := func(ctx context.Context, req llm.Request) (llm.Stream, error) {
		if isSummary(req) {
			return text("S.")(ctx, req)
		}
		switch r.IntN(5) {
		case 0:
			return nil, &llm.Error{Status: 400, Code: "invalid_value", Message: "bad"}
		case 1:
			return stall(ctx, req)
		}
		return text("A.")(ctx, req)
	}
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){answer}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	s, err := a.store.lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	pool := []string{"", " ", "\n\t", "/status", "/retry", "/retry wait", "/compact", "/continue", "/init", "/frobnicate",
		"hello", "please /status", "/status\nmore context", " /compact now"}
	for n := range prompts {
		var prompt []acp.ContentBlock
		if r.IntN(3) == 0 { // codecompanion's re-send of the last prompt the model got
			prompt = append(prompt, lastSent(t, s.events)...)
		}
		for range 1 + r.IntN(3) {
			if r.IntN(8) == 0 {
				prompt = append(prompt, acp.ContentBlock{Type: "resource_link", URI: "file:///p/a.go", Name: "a.go"})
				continue
			}
			prompt = append(prompt, acp.TextBlock(pool[r.IntN(len(pool))]))
		}
		where := fmt.Sprintf("prompt %d %q", n, renderPrompt(prompt))
		before, hist := p.count(), countUser(liveModel(t, a, id))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: prompt}, &editor{})
		}()
		synctest.Wait()
		cancel() // ends a stalled request; a turn already answered is not touched
		<-done

		sent := false
		for _, req := range p.reqs[before:] {
			sent = sent || !isSummary(req)
		}
		d := lastTurnStart(t, s.events)
		if d.Local == nil || *d.Local == sent {
			t.Fatalf("%s: recorded local %v, but the model was asked: %v", where, d.Local, sent)
		}
		after := countUser(liveModel(t, a, id))
		if sent && after[d.Text] != hist[d.Text]+1 {
			t.Fatalf("%s: the model was sent %q, but its history holds it %d times (before: %d)", where, d.Text, after[d.Text], hist[d.Text])
		}
		if !sent && after[d.Text] > hist[d.Text] {
			t.Fatalf("%s: the model was not sent %q, but its history holds it", where, d.Text)
		}
		checkHistory(t, s, where)
	}
	live := liveModel(t, a, id)
	if diff := cmp.Diff(live, loadedModel(t, a, id)); diff != "" {
		t.Fatalf("history (-live +loaded):\n%s", diff)
	}
}

// lastSent is the recorded prompt of the last turn that was not answered
// locally, nil if none.
func lastSent(t *testing.T, events []session.Event) []acp.ContentBlock {
	for i := len(events) - 1; i >= 0; i-- {
		var d session.TurnStart
		if events[i].Type != session.TypeTurnStart || json.Unmarshal(events[i].Data, &d) != nil || d.Local == nil || *d.Local {
			continue
		}
		var blocks []acp.ContentBlock
		if err := json.Unmarshal(d.Prompt, &blocks); err != nil {
			t.Fatal(err)
		}
		return blocks
	}
	return nil
}

// countUser counts the user messages of msgs by content.
func countUser(msgs []llm.Message) map[string]int {
	n := map[string]int{}
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			n[m.Content]++
		}
	}
	return n
}
