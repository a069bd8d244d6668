package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// The compactor alone, against a scripted provider, a fake log and a fake
// editor: what it replaces, records and shows, in which order.

// compactEditor notes what a compaction shows: every update sent (in sent)
// and every status card title with its status (in statuses).
type compactEditor struct {
	notices  bool
	sent     []acp.SessionUpdate
	statuses []string
}

func (e *compactEditor) notify(_ context.Context, u acp.SessionUpdate) { e.sent = append(e.sent, u) }
func (e *compactEditor) statusNotices() bool                           { return e.notices }
func (e *compactEditor) showStatus(_ context.Context, _ *waitStatus, title, _ string, status acp.ToolCallStatus) {
	e.statuses = append(e.statuses, fmt.Sprintf("%s [%s]", title, status))
}

// compactRig is a compactor over fakes, and what it did to them.
type compactRig struct {
	c       *compactor
	p       *script
	ed      *compactEditor
	records []session.Compaction
	// failRecord fails every record (the log's write failed).
	failRecord bool
	used       uint64 // the session's last known used tokens; 0: none known
	fullTurn   int
}

func newCompactRig(answers ...func(context.Context, llm.Request) (llm.Stream, error)) *compactRig {
	r := &compactRig{p: &script{answers: answers}, ed: &compactEditor{}}
	nop := zerolog.Nop()
	r.c = &compactor{
		overflow: Overflow{KeepRecentMessages: 1, CompactAt: 0.9}, maxTokens: 321,
		provider: func() llm.Provider { return r.p },
		record: func(typ string, data any) error {
			if typ != session.TypeCompaction {
				return fmt.Errorf("recorded a %s", typ)
			}
			if r.failRecord {
				return &recordError{errors.New("disk full")}
			}
			r.records = append(r.records, data.(session.Compaction))
			return nil
		},
		ed: r.ed, updates: func() bool { return true },
		lastFill: func() (uint64, bool) { return r.used, r.used > 0 },
		window:   func(string) uint64 { return 1000 },
		fullTurn: &r.fullTurn, log: &nop, sessionID: "sess_1", turn: 3,
	}
	return r
}

// longHistory is a system prompt, two long messages and a short one: with
// one kept, the two long ones are summarised.
func longHistory() []llm.Message {
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "system"},
		{Role: llm.RoleUser, Content: "What is a goroutine? " + strings.Repeat("x", 400)},
		{Role: llm.RoleAssistant, Content: "A light thread. " + strings.Repeat("y", 400)},
		{Role: llm.RoleUser, Content: "And a channel?"},
	}
}

func compactionOf(h []llm.Message) compaction {
	return compaction{history: h, model: "m1", step: 5, start: time.Now(),
		rest: func() []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: "prompt"}} }}
}

func updateStatuses(us []acp.SessionUpdate) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.SessionUpdate+":"+u.Status)
	}
	return out
}

func TestCompactor_ReplacesTheOlderHistory(t *testing.T) {
	r := newCompactRig(text("They talked about goroutines."))
	h := longHistory()
	orig := append([]llm.Message{}, h...)
	got, err := r.c.compact(t.Context(), compactionOf(h))
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Message{h[0], summaryMessage("They talked about goroutines."), h[3]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(orig, h); diff != "" {
		t.Errorf("the history given was changed (-was +now):\n%s", diff)
	}
	if len(r.p.reqs) != 1 {
		t.Fatalf("%d summary requests, want 1", len(r.p.reqs))
	}
	req := r.p.reqs[0]
	if req.Model != "m1" || req.MaxTokens != 321 || len(req.Tools) != 0 || !strings.Contains(req.Messages[1].Content, "What is a goroutine?") ||
		strings.Contains(req.Messages[1].Content, "And a channel?") {
		t.Errorf("summary request: model %q, max tokens %d, %d tools, transcript %.80q", req.Model, req.MaxTokens, len(req.Tools), req.Messages[1].Content)
	}
	if len(r.records) != 1 {
		t.Fatalf("%d compaction records, want 1", len(r.records))
	}
	rec := r.records[0]
	before, after := chars(h)+len("prompt"), chars(want)+len("prompt")
	if rec.Turn != 3 || rec.Step != 5 || rec.Replaced != 2 || rec.Summary != "They talked about goroutines." || rec.Failed != "" ||
		rec.BeforeChars != before || rec.AfterChars != after || rec.CompactionID == "" {
		t.Errorf("record %+v, want turn 3, step 5, 2 replaced, %d → %d characters", rec, before, after)
	}
	if diff := cmp.Diff([]string{"compaction_update:in_progress", "compaction_update:completed"}, updateStatuses(r.ed.sent)); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if r.ed.sent[0].CompactionID != rec.CompactionID || r.ed.sent[1].CompactionID != rec.CompactionID {
		t.Errorf("updates under %q and %q, record under %q", r.ed.sent[0].CompactionID, r.ed.sent[1].CompactionID, rec.CompactionID)
	}
}

// Whatever keeps a compaction from replacing the history, the history
// stays, the editor's compaction ends failed, and a summary request made is
// recorded as a failed compaction.
func TestCompactor_FailsWithoutReplacing(t *testing.T) {
	tests := []struct {
		name     string
		history  []llm.Message
		answer   func(context.Context, llm.Request) (llm.Stream, error)
		noUpdate bool // the editor does not take compaction updates
		failLog  bool
		want     error
		wantErr  string
		requests int
		recorded bool // a failed compaction is recorded
		updates  []string
	}{
		{name: "nothing older than the prompt", history: longHistory()[:1], want: ErrPromptTooLong},
		{name: "not smaller", history: longHistory()[:3], answer: text(strings.Repeat("z", 2000)), want: ErrCompactionNotSmaller,
			requests: 1, recorded: true, updates: []string{"compaction_update:in_progress", "compaction_update:failed"}},
		{name: "summary cut", history: longHistory(), answer: reply(llm.Chunk{Content: "They"}, llm.Chunk{FinishReason: llm.FinishLength}),
			want: ErrSummaryUnfinished, requests: 1, recorded: true, updates: []string{"compaction_update:in_progress", "compaction_update:failed"}},
		{name: "summary empty", history: longHistory(), answer: text(" "), wantErr: "the summary request failed",
			requests: 1, recorded: true, updates: []string{"compaction_update:in_progress", "compaction_update:failed"}},
		{name: "record fails", history: longHistory(), answer: text("short"), failLog: true, wantErr: "record compaction",
			requests: 1, updates: []string{"compaction_update:in_progress", "compaction_update:failed"}},
		{name: "editor without compaction updates", history: longHistory()[:3], answer: text(strings.Repeat("z", 2000)), noUpdate: true,
			want: ErrCompactionNotSmaller, requests: 1, recorded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newCompactRig(tt.answer)
			r.failRecord = tt.failLog
			r.c.updates = func() bool { return !tt.noUpdate }
			got, err := r.c.compact(t.Context(), compactionOf(tt.history))
			if got != nil || err == nil {
				t.Fatalf("compact = %d messages, %v; want none and an error", len(got), err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) || tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %v%s", err, tt.want, tt.wantErr)
			}
			if len(r.p.reqs) != tt.requests {
				t.Errorf("%d summary requests, want %d", len(r.p.reqs), tt.requests)
			}
			if tt.recorded != (len(r.records) == 1) || len(r.records) > 1 {
				t.Errorf("records %+v, want a failed one: %v", r.records, tt.recorded)
			} else if tt.recorded && (r.records[0].Failed == "" || r.records[0].Summary != "" || r.records[0].Replaced != 0) {
				t.Errorf("record %+v, want a failed compaction that replaced nothing", r.records[0])
			}
			if diff := cmp.Diff(tt.updates, updateStatuses(r.ed.sent)); diff != "" {
				t.Errorf("updates (-want +got):\n%s", diff)
			}
		})
	}
}

// summaryLimit: the least of Rebound's own limit, attempt_timeout and what
// is left of request_deadline, named.
func TestCompactor_SummaryLimit(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name           string
		attempt, dline time.Duration
		start          time.Time
		max            time.Duration
		why            string
	}{
		{name: "none set", start: now, max: MaxSummaryTime, why: "Rebound's limit for a summary"},
		{name: "attempt timeout", attempt: time.Minute, start: now, max: time.Minute, why: "attempt_timeout"},
		{name: "attempt timeout above the limit", attempt: time.Hour, start: now, max: MaxSummaryTime, why: "Rebound's limit for a summary"},
		{name: "deadline nearly passed", attempt: time.Minute, dline: 10 * time.Minute, start: now.Add(-9*time.Minute - 30*time.Second),
			max: 30 * time.Second, why: "what was left of request_deadline 10m0s"},
		{name: "deadline passed", dline: time.Minute, start: now.Add(-2 * time.Minute), max: -time.Minute, why: "what was left of request_deadline 1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCompactRig().c
			c.limits.AttemptTimeout, c.limits.RequestDeadline = tt.attempt, tt.dline
			limit, why := c.summaryLimit(tt.start)
			if why != tt.why || limit > tt.max || limit < tt.max-time.Second {
				t.Errorf("summaryLimit = %s, %q; want about %s, %q", limit, why, tt.max, tt.why)
			}
		})
	}
	// No time left: no request is made.
	r := newCompactRig(text("never"))
	r.c.limits.RequestDeadline = time.Minute
	in := compactionOf(longHistory())
	in.start = now.Add(-2 * time.Minute)
	if _, err := r.c.compact(t.Context(), in); err == nil || !strings.Contains(err.Error(), "no time was left") || len(r.p.reqs) != 0 {
		t.Errorf("compact after the deadline: %v, %d requests; want no time left, none", err, len(r.p.reqs))
	}
}

// compactIfFull: once a turn, only with a known fill at compact_at of a
// known window, shown as a status card (and notices where the editor takes
// them), the request going out as it is when the summary fails.
func TestCompactor_CompactIfFull(t *testing.T) {
	const subject = "The conversation is nearly full (95% of the model's context)"
	tests := []struct {
		name      string
		used      uint64
		window    uint64
		model     string
		compactAt float64
		fullTurn  int
		answer    func(context.Context, llm.Request) (llm.Stream, error)
		notices   bool
		compacted bool
		statuses  []string
		notes     []string // notices' severity: title
	}{
		{name: "below the fill", used: 899, window: 1000, compactAt: 0.9},
		{name: "no usage known", used: 0, window: 1000, compactAt: 0.9},
		{name: "window unknown", used: 950, model: "unknown-model", compactAt: 0.9},
		{name: "off", used: 950, window: 1000},
		{name: "once a turn", used: 950, window: 1000, compactAt: 0.9, fullTurn: 3},
		{name: "summarised", used: 950, window: 1000, compactAt: 0.9, answer: text("short"), compacted: true,
			statuses: []string{subject + ", summarising older messages [in_progress]", subject + ", summarised [completed]"}},
		{name: "the table's window", used: 121_600, model: "gpt-4o-mini", compactAt: 0.9, answer: text("short"), compacted: true,
			statuses: []string{"The conversation is nearly full (95% of the model's context), summarising older messages [in_progress]",
				"The conversation is nearly full (95% of the model's context), summarised [completed]"}},
		{name: "summary failed, with notices", used: 950, window: 1000, compactAt: 0.9, notices: true,
			answer:   reply(llm.Chunk{Content: "They"}, llm.Chunk{FinishReason: llm.FinishLength}),
			statuses: []string{subject + ", summarising older messages [in_progress]", subject + ", could not summarise, sending it as it is [failed]"},
			notes:    []string{"info: " + subject, "warning: " + subject + ", could not summarise, sending it as it is"}},
		{name: "not smaller", used: 950, window: 1000, compactAt: 0.9, answer: text(strings.Repeat("z", 2000)),
			statuses: []string{subject + ", summarising older messages [in_progress]", subject + ", nothing to summarise, sending it as it is [failed]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newCompactRig(tt.answer)
			r.used, r.fullTurn, r.ed.notices = tt.used, tt.fullTurn, tt.notices
			r.c.overflow.CompactAt = tt.compactAt
			r.c.window = func(string) uint64 { return tt.window }
			in := compactionOf(longHistory())
			in.model = tt.model
			in.start = time.Now().Add(-time.Hour) // compactIfFull counts the deadline from its own start
			r.c.limits.RequestDeadline = time.Minute
			got := r.c.compactIfFull(t.Context(), in)
			if (got != nil) != tt.compacted {
				t.Errorf("compacted: %v, want %v", got != nil, tt.compacted)
			}
			asked := tt.statuses != nil
			if asked != (len(r.p.reqs) == 1) {
				t.Errorf("%d summary requests; want one: %v", len(r.p.reqs), asked)
			}
			if asked && r.fullTurn != 3 {
				t.Errorf("the session's full turn is %d, want 3 (this turn's)", r.fullTurn)
			}
			if diff := cmp.Diff(tt.statuses, r.ed.statuses); diff != "" {
				t.Errorf("status cards (-want +got):\n%s", diff)
			}
			var notes []string
			for _, u := range r.ed.sent {
				if u.SessionUpdate == acp.UpdateNotice {
					notes = append(notes, u.Severity+": "+u.Title)
				}
			}
			if diff := cmp.Diff(tt.notes, notes); diff != "" {
				t.Errorf("notices (-want +got):\n%s", diff)
			}
			if !asked {
				return
			}
			// At most once a turn: a summary still over the fill must not loop.
			if again := r.c.compactIfFull(t.Context(), in); again != nil || len(r.p.reqs) != 1 {
				t.Errorf("a second compactIfFull in the turn made %d requests in all", len(r.p.reqs))
			}
		})
	}
}

// With nothing older than the messages kept verbatim, those are summarised
// too: an overflow of a short history can still be compacted.
func TestCompactor_SummarisesTheKeptWhenNothingIsOlder(t *testing.T) {
	r := newCompactRig(text("short"))
	h := longHistory()[:2]
	got, err := r.c.compact(t.Context(), compactionOf(h))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]llm.Message{h[0], summaryMessage("short")}, got); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if len(r.records) != 1 || r.records[0].Replaced != 1 {
		t.Errorf("records %+v, want one that replaced 1 message", r.records)
	}
}

// Whatever the history's shape and keep_recent_messages, the history a
// compaction leaves answers every tool call in order: no tool result
// follows anything but its call's assistant message or a sibling result.
// (Keeping the newest messages as they were cut a tool call from its
// results after the commonest turn, call → result → reply; strict
// providers refuse such a request.) The kept messages are the body's
// newest, unchanged, and the summary replaced exactly the others.
func TestCompactor_KeepsToolResultsWithTheirCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 30))
	compacted := 0
	for i := range 400 {
		h := []llm.Message{{Role: llm.RoleSystem, Content: "system"}}
		for range 1 + rng.IntN(6) {
			switch rng.IntN(3) {
			case 0:
				h = append(h, llm.Message{Role: llm.RoleUser, Content: "ask " + strings.Repeat("u", rng.IntN(300))})
			case 1:
				h = append(h, llm.Message{Role: llm.RoleAssistant, Content: "say " + strings.Repeat("a", rng.IntN(300))})
			default:
				calls := 1 + rng.IntN(3)
				m := llm.Message{Role: llm.RoleAssistant}
				for k := range calls {
					m.ToolCalls = append(m.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("call_%d_%d", len(h), k), Name: "read_file", Arguments: "{}"})
				}
				h = append(h, m)
				for _, c := range m.ToolCalls {
					h = append(h, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Content: strings.Repeat("z", rng.IntN(400))})
				}
			}
		}
		keep := rng.IntN(5)
		r := newCompactRig(text("S."))
		r.c.overflow.KeepRecentMessages = keep
		got, err := r.c.compact(t.Context(), compactionOf(slices.Clone(h)))
		if err != nil {
			continue // nothing to replace, or not smaller: no history to check
		}
		compacted++
		kept := got[2:]
		body := h[1:]
		if !slices.EqualFunc(kept, body[len(body)-len(kept):], func(a, b llm.Message) bool { return cmp.Equal(a, b) }) {
			t.Fatalf("case %d: the kept messages are not the body's newest", i)
		}
		if len(r.records) != 1 || r.records[0].Replaced != len(body)-len(kept) {
			t.Fatalf("case %d: recorded %+v, want %d replaced", i, r.records, len(body)-len(kept))
		}
		if len(kept) > keep {
			t.Fatalf("case %d: kept %d messages, more than keep_recent_messages %d", i, len(kept), keep)
		}
		for j, m := range kept {
			if m.Role != llm.RoleTool {
				continue
			}
			k := j - 1
			for k >= 0 && kept[k].Role == llm.RoleTool {
				k--
			}
			if k < 0 || !slices.ContainsFunc(kept[k].ToolCalls, func(c llm.ToolCall) bool { return c.ID == m.ToolCallID }) {
				t.Fatalf("case %d (keep %d): tool result %s at %d answers no call before it: %+v", i, keep, m.ToolCallID, j, kept)
			}
		}
	}
	if compacted < 200 {
		t.Errorf("only %d of 400 histories were compacted: the generator no longer tests much", compacted)
	}
}
