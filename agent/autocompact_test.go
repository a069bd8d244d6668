package agent

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// longAnswer is long enough that a short summary makes the request smaller.
var longAnswer = "A goroutine is a function running concurrently with others in the same address space; " +
	strings.Repeat("the runtime multiplexes them onto threads. ", 5)

// usedReply answers text and reports prompt tokens of usage (and 10 of
// completion), as a provider does at the end of its stream.
func usedReply(text string, prompt int) func(context.Context, llm.Request) (llm.Stream, error) {
	return reply(llm.Chunk{Content: text}, llm.Chunk{FinishReason: llm.FinishStop},
		llm.Chunk{Usage: &llm.Usage{PromptTokens: prompt, CompletionTokens: 10}})
}

func isSummary(r llm.Request) bool {
	return len(r.Messages) > 0 && r.Messages[0].Content == summariseInstruction
}

func failSummary(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 500, Message: "summary service down"}
}

// TestCompactIfFull: with compact_at 0.9 of a 1000-token window, a turn
// whose last request used 910 tokens makes the next turn summarise first
// and send the compacted history; 889 (just below), an unknown window or
// compact_at 0 ask for no summary; a failed summary still sends the request.
func TestCompactIfFull(t *testing.T) {
	tests := []struct {
		name       string
		window     uint64
		compactAt  float64
		prompt     int // prompt tokens the first turn's request reports
		summary    func(context.Context, llm.Request) (llm.Stream, error)
		wantSumm   bool // the second turn's first request is a summary
		compacted  bool // and the request after it carries it
		wantStatus string
	}{
		{name: "above the fill", window: 1000, compactAt: 0.9, prompt: 900, summary: text("They talked about goroutines."), wantSumm: true, compacted: true,
			wantStatus: "The conversation is nearly full (91% of the model's context), summarised"},
		{name: "below the fill", window: 1000, compactAt: 0.9, prompt: 889},
		{name: "unknown window", window: 0, compactAt: 0.9, prompt: 1_000_000},
		{name: "disabled", window: 1000, compactAt: 0, prompt: 990},
		{name: "summary fails", window: 1000, compactAt: 0.9, prompt: 990, summary: failSummary, wantSumm: true,
			wantStatus: "The conversation is nearly full (100% of the model's context), could not summarise, sending it as it is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				answers := []func(context.Context, llm.Request) (llm.Stream, error){usedReply(longAnswer, tt.prompt)}
				if tt.wantSumm {
					answers = append(answers, tt.summary)
				}
				answers = append(answers, usedReply("Use a WaitGroup.", 100))
				p := &script{answers: answers}
				a := testAgent(t, Config{Provider: p, ContextWindow: tt.window, Overflow: Overflow{KeepRecentMessages: 2, CompactAt: tt.compactAt}})
				id := newSession(t, a)
				if _, err := ask(t.Context(), a, id, "What is a goroutine?"); err != nil {
					t.Fatal(err)
				}
				e := &editor{}
				resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("How do I wait for them?")}}, e)
				if err != nil || resp.StopReason != acp.StopEndTurn {
					t.Fatalf("second turn = %+v, %v", resp, err)
				}
				wantReqs := 2
				if tt.wantSumm {
					wantReqs = 3
				}
				if p.count() != wantReqs {
					t.Fatalf("%d requests, want %d", p.count(), wantReqs)
				}
				if got := isSummary(p.reqs[1]); got != tt.wantSumm {
					t.Fatalf("the second turn's first request is a summary: %v, want %v", got, tt.wantSumm)
				}
				last := p.reqs[len(p.reqs)-1]
				if isSummary(last) || !strings.Contains(last.Messages[len(last.Messages)-1].Content, "How do I wait for them?") {
					t.Fatalf("the last request is not the turn's: %+v", last.Messages)
				}
				var sent strings.Builder
				for _, m := range last.Messages[1:] {
					sent.WriteString(m.Content + "\n")
				}
				if got := strings.Contains(sent.String(), "They talked about goroutines."); got != tt.compacted {
					t.Errorf("the request carries the summary: %v, want %v:\n%s", got, tt.compacted, sent.String())
				}
				if got := strings.Contains(sent.String(), longAnswer); got == tt.compacted {
					t.Errorf("the request carries the old answer: %v, want %v", got, !tt.compacted)
				}
				events := mustLoad(t, a, id)
				if done, _ := compactions(t, events); len(done) != map[bool]int{true: 1}[tt.compacted] {
					t.Errorf("%d compactions that replaced history, want compacted %v", len(done), tt.compacted)
				}
				if got := lastStatusTitle(e); got != tt.wantStatus {
					t.Errorf("status = %q, want %q", got, tt.wantStatus)
				}
			})
		})
	}
}

// lastStatusTitle is the title of the last status tool call update e got.
func lastStatusTitle(e *editor) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	title := ""
	for _, u := range e.updates {
		if strings.HasPrefix(u.ToolCallID, statusIDPrefix) {
			title = u.Title
		}
	}
	return title
}

// TestCompactIfFull_OncePerTurn: a turn whose every step reports a context
// over the fill summarises once, before its first request, not before the
// step after its tool call; the next turn may again.
func TestCompactIfFull_OncePerTurn(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		usedReply(longAnswer, 950),
		text("They talked about goroutines."), // summary
		reply(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "read_file", Arguments: `{"path":"x"}`}}},
			llm.Chunk{FinishReason: llm.FinishToolCalls}, llm.Chunk{Usage: &llm.Usage{PromptTokens: 960}}),
		usedReply("No such file.", 970),
		text("Still about goroutines."), // the third turn's summary
		usedReply("Done.", 100),
	}}
	a := testAgent(t, Config{Provider: p, ContextWindow: 1000, Overflow: Overflow{KeepRecentMessages: 2, CompactAt: 0.9}})
	id := newSession(t, a)
	for _, q := range []string{"What is a goroutine?", "Read x", "Thanks"} {
		if _, err := ask(t.Context(), a, id, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var kinds []bool
	for _, r := range p.reqs {
		kinds = append(kinds, isSummary(r))
	}
	want := []bool{false, true, false, false, true, false}
	if len(kinds) != len(want) {
		t.Fatalf("requests (summary or not) = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("requests (summary or not) = %v, want %v", kinds, want)
		}
	}
}

// TestCompactIfFull_AfterRestartAndCompaction: the last usage is read back
// from the log by a new process, and a compaction (here /compact) makes it
// unknown: its figure is of the context before the summary.
func TestCompactIfFull_AfterRestartAndCompaction(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{StateDir: dir, ContextWindow: 1000, Overflow: Overflow{KeepRecentMessages: 2, CompactAt: 0.9}}
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){usedReply(longAnswer, 950)}}
	cfg.Provider = p
	a := testAgent(t, cfg)
	id := newSession(t, a)
	if _, err := ask(t.Context(), a, id, "What is a goroutine?"); err != nil {
		t.Fatal(err)
	}
	a.Close()

	p = &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("They talked about goroutines."), usedReply("Use a WaitGroup.", 950), text("Short.")}}
	cfg.Provider = p
	b := testAgent(t, cfg)
	if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, &editor{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ask(t.Context(), b, id, "How do I wait for them?"); err != nil {
		t.Fatal(err)
	}
	if p.count() != 2 || !isSummary(p.reqs[0]) {
		t.Fatalf("after a restart: %d requests, the first a summary: %v", p.count(), p.count() > 0 && isSummary(p.reqs[0]))
	}
	// The last step used 950 again; /compact summarises, and its figure
	// no longer counts.
	if _, got := slashPrompt(t, b, id, "/compact"); !strings.HasPrefix(got, "Compacted") {
		t.Fatalf("/compact = %q", got)
	}
	if _, err := ask(t.Context(), b, id, "Thanks"); err != nil {
		t.Fatal(err)
	}
	if n := p.count(); n != 4 || isSummary(p.reqs[3]) {
		t.Errorf("after /compact: %d requests, the last a summary: %v; want 4, the turn's", n, isSummary(p.reqs[n-1]))
	}
}

// TestLastFill: the figure from typed appends and from the log's bytes is
// the same, a failed step keeps it, a compaction forgets it.
func TestLastFill(t *testing.T) {
	end := func(u *session.StepUsage) (session.Event, session.StepEnd) {
		d := session.StepEnd{Turn: 1, Step: 1, Outcome: session.OutcomeOK, Usage: u}
		return session.Event{Type: session.TypeStepEnd, Data: mustJSON(d)}, d
	}
	okEv, ok := end(&session.StepUsage{Used: 700, Size: 1000})
	failEv, failed := end(nil)
	cmp := session.Event{Type: session.TypeCompaction, Data: mustJSON(session.Compaction{Turn: 1, Summary: "s"})}
	for _, typed := range []bool{true, false} {
		var f session.UsageFill
		if _, known := f.Used(); known {
			t.Fatal("a new session has a known usage")
		}
		add := func(ev session.Event, d session.StepEnd) {
			if typed {
				f.Add(ev, d)
			} else {
				f.Add(ev, nil)
			}
		}
		add(okEv, ok)
		add(failEv, failed)
		if used, known := f.Used(); used != 700 || !known {
			t.Errorf("typed %v: get() = %d, %v; want 700, true", typed, used, known)
		}
		// A compaction recorded failed replaced nothing: the figure holds.
		failedCmp := session.Compaction{Turn: 1, Failed: "the summary did not finish"}
		if ev := (session.Event{Type: session.TypeCompaction, Data: mustJSON(failedCmp)}); typed {
			f.Add(ev, failedCmp)
		} else {
			f.Add(ev, nil)
		}
		if used, known := f.Used(); used != 700 || !known {
			t.Errorf("typed %v: after a failed compaction get() = %d, %v; want 700, true", typed, used, known)
		}
		f.Add(cmp, nil)
		if _, known := f.Used(); known {
			t.Errorf("typed %v: the usage is known after a compaction", typed)
		}
		// The record stays: the session's cost goes on from it.
		if u := f.Last(); u == nil || u.Used != 700 {
			t.Errorf("typed %v: last() after a compaction = %+v, want the 700-token record", typed, u)
		}
	}
}
