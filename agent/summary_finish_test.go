package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// summaryEnding is a summary reply that ends with finish ("" sends no
// finish reason at all).
func summaryEnding(finish string) func(context.Context, llm.Request) (llm.Stream, error) {
	chunks := []llm.Chunk{{Content: "They talked about"}}
	if finish != "" {
		chunks = append(chunks, llm.Chunk{FinishReason: finish})
	}
	return reply(chunks...)
}

// The finishes a summary is refused for: each may mean the text was cut.
var unfinished = []struct{ finish, why string }{
	{llm.FinishLength, "cut off at the output limit (provider.max_tokens = 100)"},
	{llm.FinishContentFilter, "content filter stopped it"},
	{llm.FinishToolCalls, "asked to call a tool"},
	{"", "ended without saying it had finished"},
	{"eos_maybe", `finish_reason "eos_maybe"`},
}

func TestFinished(t *testing.T) {
	for _, r := range []string{"stop", "STOP", "end_turn", "stop_sequence", "eos", "eos_token", "COMPLETE"} {
		if !llm.Finished(r) {
			t.Errorf("Finished(%q) = false", r)
		}
	}
	for _, r := range []string{"", "length", "content_filter", "tool_calls", "function_call", "max_tokens", "stopped", "error", "sensitive", "network_error", "null"} {
		if llm.Finished(r) {
			t.Errorf("Finished(%q) = true", r)
		}
	}
}

// sentText is every message content of req after the system prompt.
func sentText(req llm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages[1:] {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}

// compactionStatuses are the statuses of the compaction_updates e got.
func compactionStatuses(e *editor) (out []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range e.updates {
		if u.SessionUpdate == acp.UpdateCompaction {
			out = append(out, u.Status)
		}
	}
	return out
}

// #29.6: /compact whose summary did not finish (cut at the output limit,
// filtered, ...) fails visibly, says why, and keeps the history: no
// compaction is recorded, the next turn sends the old messages, the
// editor's compaction ends failed. A summary that did finish still
// compacts.
func TestSlashCompact_UnfinishedSummaryKeepsHistory(t *testing.T) {
	long := strings.Repeat("A long answer. ", 20)
	for _, u := range unfinished {
		t.Run(cmpName(u.finish), func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("A1. " + long), text("A2. " + long), summaryEnding(u.finish), text("A3.")}}
			a := testAgent(t, Config{Provider: p})
			id := newSession(t, a)
			for _, q := range []string{"Q1", "Q2"} {
				if _, err := ask(t.Context(), a, id, q); err != nil {
					t.Fatal(err)
				}
			}
			ed := &capsEditor{caps: `{"session":{"compaction":{}}}`}
			_, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("/compact")}}, ed)
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || !strings.HasPrefix(re.Message, "Could not compact the conversation: the summary did not finish: ") ||
				!strings.Contains(re.Message, u.why) || !strings.HasSuffix(re.Message, "It is kept as it was.") {
				t.Fatalf("/compact = %v, want a failure saying %q and that the conversation is kept", err, u.why)
			}
			if got := compactionStatuses(&ed.editor); !slices.Equal(got, []string{"in_progress", "failed"}) {
				t.Errorf("compaction_update statuses %q, want in_progress then failed", got)
			}
			if end := lastTurnEnd(t, mustLoad(t, a, id)); !strings.Contains(end, "the summary did not finish") {
				t.Errorf("the /compact turn's turn/end = %s, want its failure", end)
			}
			if _, err := ask(t.Context(), a, id, "Q3"); err != nil {
				t.Fatal(err)
			}
			if sent := sentText(p.reqs[3]); !strings.Contains(sent, "A1. ") || strings.Contains(sent, "They talked about") {
				t.Errorf("the next turn's request does not carry the old history, or carries the cut summary:\n%s", sent)
			}
			checkFailedCompaction(t, mustLoad(t, a, id), u.why)
		})
	}
}

// #29.6: the overflow recovery's compaction takes no summary that did not
// finish: the turn fails with the overflow and the reason, the history is
// kept for the next turn, and nothing is recorded as compacted.
func TestOverflow_UnfinishedSummaryKeepsHistory(t *testing.T) {
	for _, u := range unfinished {
		t.Run(cmpName(u.finish), func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("first reply"), overflow, summaryEnding(u.finish), text("third reply")}}
			a := testAgent(t, Config{Provider: p, Recovery: recovery.Config{Overflow: true}})
			id := newSession(t, a)
			if _, err := ask(t.Context(), a, id, "one"); err != nil {
				t.Fatal(err)
			}
			ed := &capsEditor{caps: `{"session":{"compaction":{}}}`}
			_, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("two")}}, ed)
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || !strings.HasPrefix(re.Message, "The conversation is too long for the model") || !strings.Contains(re.Message, "the summary did not finish") ||
				!strings.Contains(re.Message, u.why) {
				t.Fatalf("error = %v, want the overflow and %q", err, u.why)
			}
			if got := compactionStatuses(&ed.editor); !slices.Equal(got, []string{"in_progress", "failed"}) {
				t.Errorf("compaction_update statuses %q, want in_progress then failed", got)
			}
			if _, err := ask(t.Context(), a, id, "three"); err != nil {
				t.Fatal(err)
			}
			if sent := sentText(p.reqs[3]); !strings.Contains(sent, "first reply") || strings.Contains(sent, "They talked about") {
				t.Errorf("the next turn's request does not carry the old history, or carries the cut summary:\n%s", sent)
			}
			checkFailedCompaction(t, mustLoad(t, a, id), u.why)
		})
	}
}

// #29.6: compaction at compact_at takes no summary that did not finish:
// the request goes out with the history as it was, and the editor is told
// no summary replaced it and why (a warning notice, or the status tool
// call for a client without notices).
func TestCompactIfFull_UnfinishedSummaryKeepsHistory(t *testing.T) {
	for _, u := range unfinished {
		for _, caps := range []string{`{"session":{"notices":{}}}`, `{}`} {
			t.Run(cmpName(u.finish)+"/"+caps, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){usedReply(longAnswer, 950), summaryEnding(u.finish), usedReply("Use a WaitGroup.", 100)}}
					a := testAgent(t, Config{Provider: p, ContextWindow: 1000, Overflow: Overflow{KeepRecentMessages: 2, CompactAt: 0.9}})
					id := newSession(t, a)
					if _, err := ask(t.Context(), a, id, "What is a goroutine?"); err != nil {
						t.Fatal(err)
					}
					ed := &capsEditor{caps: caps}
					resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("How do I wait for them?")}}, ed)
					if err != nil || resp.StopReason != acp.StopEndTurn {
						t.Fatalf("second turn = %+v, %v", resp, err)
					}
					if p.count() != 3 || !isSummary(p.reqs[1]) {
						t.Fatalf("%d requests, want the reply, the summary, the turn's", p.count())
					}
					if sent := sentText(p.reqs[2]); !strings.Contains(sent, longAnswer) || strings.Contains(sent, "They talked about") {
						t.Errorf("the request does not carry the old history, or carries the cut summary:\n%s", sent)
					}
					const title = "The conversation is nearly full (96% of the model's context), could not summarise, sending it as it is"
					if caps == `{}` {
						if got := lastStatusTitle(&ed.editor); got != title {
							t.Errorf("status = %q, want %q", got, title)
						}
					} else if n := warningNotice(&ed.editor, title); !strings.Contains(n, u.why) {
						t.Errorf("warning notice %q, want %q saying %q", n, title, u.why)
					}
					checkFailedCompaction(t, mustLoad(t, a, id), u.why)
				})
			})
		}
	}
}

// warningNotice is the description of the warning notice titled title e
// got, "" if none.
func warningNotice(e *editor, title string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range e.updates {
		if u.SessionUpdate == acp.UpdateNotice && u.Severity == "warning" && u.Title == title {
			return u.Description
		}
	}
	return ""
}

func cmpName(finish string) string {
	if finish == "" {
		return "none"
	}
	return finish
}

// compactions are the compaction records of events, those that replaced
// history and those recorded failed.
func compactions(t *testing.T, events []session.Event) (done, failed []session.Compaction) {
	t.Helper()
	for _, ev := range events {
		if ev.Type != session.TypeCompaction {
			continue
		}
		var d session.Compaction
		if err := session.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		if d.Failed != "" {
			failed = append(failed, d)
		} else {
			done = append(done, d)
		}
	}
	return done, failed
}

// checkFailedCompaction: the log holds one compaction, recorded failed with
// why (the summary request is accounted for), and none that replaced
// anything.
func checkFailedCompaction(t *testing.T, events []session.Event, why string) {
	t.Helper()
	done, failed := compactions(t, events)
	if len(done) != 0 || len(failed) != 1 || !strings.Contains(failed[0].Failed, why) || failed[0].Replaced != 0 || failed[0].Summary != "" {
		t.Errorf("compactions %+v, failed %+v; want one failed saying %q", done, failed, why)
	}
}
