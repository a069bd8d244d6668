// Package inspect turns a session log into a timeline a person (or a
// script) can read: the turns of a session, the provider attempts (steps) of
// each turn with how they ended, the retries scheduled after failed attempts
// with the delay that was planned and the wait that actually happened,
// compactions, fallback model switches, and the final outcome of every turn,
// with totals.
//
// The log is the only source: the timeline says what was made durable, not
// what the process believed. Build insists on a log that keeps the session
// package's invariants, so every rule the timeline relies on (a step belongs
// to the open turn, a retry chain counts up by one, ...) holds.
//
// The model is plain data with stable JSON names; Text, JSON and HTML render
// it for a terminal, a machine and a browser.
package inspect

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Timeline is everything inspect knows about one session log.
type Timeline struct {
	Session Session `json:"session"`
	Turns   []*Turn `json:"turns"`
	// Totals sums the turns' totals; its ElapsedMs is the time spent inside
	// turns, not the age of the session.
	Totals Totals `json:"totals"`
	// Usage is the session's: context at the end of its last step that
	// recorded usage, the token counts of all its turns, and its cumulative
	// cost as last recorded. Nil for a log that recorded no usage (one
	// written before usage was recorded).
	Usage *Usage `json:"usage,omitempty"`
	// Warnings are what loading the log repaired or found left open (a torn
	// last line, a turn without turn/end), each naming its line.
	Warnings []string `json:"warnings,omitempty"`
}

// Session is the log's session/start, plus where the log was read from.
type Session struct {
	ID           string    `json:"id"`
	Cwd          string    `json:"cwd"`
	Model        string    `json:"model,omitempty"`
	AgentVersion string    `json:"agentVersion,omitempty"`
	Log          string    `json:"log,omitempty"` // the file read, when read from one
	Start        time.Time `json:"start"`
}

// Turn statuses (Outcome.Status).
const (
	// TurnCompleted: the turn answered a stop reason other than cancelled.
	TurnCompleted = "completed"
	// TurnCancelled: the editor cancelled the turn.
	TurnCancelled = "cancelled"
	// TurnFailed: recovery gave up or the turn crashed; Outcome.Error says why.
	TurnFailed = "failed"
	// TurnInterrupted: the process died during the turn; a later process
	// closed it on load.
	TurnInterrupted = "interrupted"
	// TurnOpen: the log ends inside the turn (it is running, or its process
	// died and no process has loaded the session since).
	TurnOpen = "open"
)

// Turn is one prompt of the session and everything done to answer it.
type Turn struct {
	Turn   int       `json:"turn"`
	Prompt string    `json:"prompt"` // the text the model was given
	Start  time.Time `json:"start"`
	// End is when the turn ended as far as the log knows: the time of its
	// turn/end, or for an interrupted or open turn the last event written
	// while it ran (a turn/end written on a later load says nothing about
	// how long the turn ran).
	End time.Time `json:"end"`
	// OffsetMs is Start relative to the session's start.
	OffsetMs int64   `json:"offsetMs"`
	Steps    []*Step `json:"steps"`
	// Wait is a retry scheduled before the turn's first attempt: /retry
	// wait waiting out the time the last turn's failure named.
	Wait *Retry `json:"wait,omitempty"`
	// Holds are the waits on the provider's shared rate limit before an
	// attempt was sent (policy shared): no retries, and not counted as one.
	Holds       []*Retry     `json:"holds,omitempty"`
	Compactions []Compaction `json:"compactions,omitempty"`
	Outcome     Outcome      `json:"outcome"`
	Totals      Totals       `json:"totals"`
	// Usage is nil when no step of the turn recorded usage.
	Usage *Usage `json:"usage,omitempty"`
}

// Outcome is how a turn ended.
type Outcome struct {
	Status     string   `json:"status"` // TurnCompleted, TurnCancelled, TurnFailed, TurnInterrupted or TurnOpen
	StopReason string   `json:"stopReason,omitempty"`
	Error      *Failure `json:"error,omitempty"`
}

// Step outcomes (Step.Outcome): the log's own (session.OutcomeOK,
// OutcomeFailed, OutcomeCancelled) plus these two for a step that has no
// step/end of its own.
const (
	// StepInterrupted: the process died during the step.
	StepInterrupted = "interrupted"
	// StepOpen: the log ends during the step.
	StepOpen = "open"
)

// Step is one provider attempt: one request, from step/start to step/end.
type Step struct {
	Step int `json:"step"`
	// Model is the model the attempt asked for. Fallback is set when the
	// overload fallback chose it: an llm/retry of action fallback came
	// earlier in the turn (the fallback lasts the rest of its turn). A
	// model the user chose (session/config) is no fallback, whatever its
	// name.
	Model    string    `json:"model,omitempty"`
	Fallback bool      `json:"fallback,omitempty"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	// StartMs is Start relative to the turn's start.
	StartMs    int64 `json:"startMs"`
	DurationMs int64 `json:"durationMs"`
	// Outcome is ok, failed, cancelled, interrupted or open. Unclosed says
	// the log has no step/end for the step, so the outcome was taken from
	// the turn's end (a failed or cancelled turn may leave its step open).
	Outcome  string   `json:"outcome"`
	Unclosed bool     `json:"unclosed,omitempty"`
	Failure  *Failure `json:"failure,omitempty"`
	// StreamedChars counts the characters (text and reasoning) the attempt
	// streamed; for a failed attempt they were discarded, never shown.
	StreamedChars int `json:"streamedChars,omitempty"`
	// ShownChars counts the characters a live attempt showed the editor
	// (recorded before they were sent); they are never discarded: a failed
	// attempt's are continued by the next, or committed as incomplete.
	ShownChars int `json:"shownChars,omitempty"`
	// Incomplete: the reply committed here is what was shown of a step whose
	// recovery failed, was cancelled or was interrupted.
	Incomplete bool `json:"incomplete,omitempty"`
	// Reply is the start of the committed text (at most ReplyPreview
	// characters); ReplyChars its full length. The log holds the rest.
	Reply          string `json:"reply,omitempty"`
	ReplyChars     int    `json:"replyChars,omitempty"`
	ReasoningChars int    `json:"reasoningChars,omitempty"`
	FinishReason   string `json:"finishReason,omitempty"`
	MessageID      string `json:"messageId,omitempty"`
	Tools          []Tool `json:"tools,omitempty"`
	// Retry is the retry scheduled after this attempt failed, if one was.
	Retry *Retry `json:"retry,omitempty"`
	// Usage is what the step's finished request used, as its step/end
	// recorded it; nil when it recorded none.
	Usage *StepUsage `json:"usage,omitempty"`
}

// StepUsage is a step's recorded usage (session.StepUsage, copied so the
// timeline's shape does not depend on that package).
type StepUsage struct {
	// Used is the tokens in context after the request; Size the context
	// window, 0 when unknown. Estimated: the provider reported no counts,
	// so Used is Rebound's estimate and the token counts are absent.
	Used             uint64 `json:"used"`
	Size             uint64 `json:"size,omitempty"`
	Estimated        bool   `json:"estimated,omitempty"`
	PromptTokens     int    `json:"promptTokens,omitempty"`
	CompletionTokens int    `json:"completionTokens,omitempty"`
	CachedTokens     int    `json:"cachedTokens,omitempty"`
	// Cost is the session's cumulative cost after this step, in Currency,
	// when any step so far had one; not this step's own.
	Cost     *float64 `json:"cost,omitempty"`
	Currency string   `json:"currency,omitempty"`
}

// Usage is a turn's (or the session's) usage, from its steps' records.
type Usage struct {
	// Used, Size and Estimated are the context at the end: those of the
	// last step that recorded usage.
	Used      uint64 `json:"used"`
	Size      uint64 `json:"size,omitempty"`
	Estimated bool   `json:"estimated,omitempty"`
	// The token counts are summed over the steps (saturating, so a hostile
	// log cannot wrap them); Unreported counts the steps whose provider
	// reported none (their Used is an estimate), which the sums miss.
	PromptTokens     int64 `json:"promptTokens"`
	CompletionTokens int64 `json:"completionTokens"`
	CachedTokens     int64 `json:"cachedTokens"`
	Unreported       int   `json:"unreported,omitempty"`
	// Cost is what the turn cost: the cumulative cost its last costed step
	// recorded less the one recorded before the turn (rounded to 1e-10, as
	// the agent rounds). For the session it is the last cumulative cost
	// recorded. Nil when no step recorded one, or when no honest figure
	// exists (the currency changed since the previous record, or the
	// cumulative figure went down).
	Cost     *float64 `json:"cost,omitempty"`
	Currency string   `json:"currency,omitempty"`
}

// ReplyPreview is the most characters of a committed reply kept in
// Step.Reply: enough to recognise it, not enough to bloat the timeline.
const ReplyPreview = 200

// Failure is the failure facts as the log holds them (recovery.Failure's
// JSON, decoded here so the timeline's shape does not depend on that
// package).
type Failure struct {
	Code         string `json:"code"`
	Message      string `json:"message,omitempty"`
	Status       int    `json:"status,omitempty"`
	RetryAfterMs *int64 `json:"retryAfterMs,omitempty"`
	RequestID    string `json:"requestId,omitempty"`
	ProviderCode string `json:"providerCode,omitempty"`
	ProviderType string `json:"providerType,omitempty"`
	// Dialect and RecognisedBy say how the code was recognised: the entry of
	// the dialect table, or the word class and where its words were
	// ("words:overflow"); neither when the status alone said it.
	Dialect      string `json:"dialect,omitempty"`
	RecognisedBy string `json:"recognisedBy,omitempty"`
}

// Recognised says how the failure's code was recognised when more than
// its status said it: "dialect:<id>" or the word class ("words:quota"),
// else "".
func (f *Failure) Recognised() string {
	switch how := recovery.HowRecognised(f.Dialect, f.RecognisedBy, f.Status, false); how {
	case "status", "in-stream":
		return ""
	default:
		return how
	}
}

// Tool is a tool call of a committed step and how it ended.
type Tool struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Title string `json:"title,omitempty"` // as the editor showed it; "" if the call was never dispatched
	// Permission is the user's answer when one was asked: allow_once,
	// allow_always, reject_once, reject_always or cancelled.
	Permission string `json:"permission,omitempty"`
	Status     string `json:"status,omitempty"` // completed, failed, aborted; "" if the log has no result
	// Plan is what an update_plan call set the plan to, e.g. "2 of 5 done".
	Plan string `json:"plan,omitempty"`
}

// How a retry's wait ended (Retry.Wait), as session.Recoveries derives it
// (the derivation /status and replay read too).
const (
	// WaitDone: llm/retry-started was written; WaitedMs is the real wait.
	WaitDone = session.WaitEndDone
	// WaitCancelled: the turn was cancelled during the wait; WaitedMs is
	// how long it had waited.
	WaitCancelled = session.WaitEndCancelled
	// WaitFailed: the turn ended with an error during the wait.
	WaitFailed = session.WaitEndFailed
	// WaitInterrupted: the process died during the wait; the chain goes on
	// in the session's next request. WaitedMs is unknown.
	WaitInterrupted = session.WaitEndInterrupted
	// WaitOpen: the log ends during the wait. WaitedMs is unknown.
	WaitOpen = session.WaitEndOpen
)

// Retry is an llm/retry: the decision, made after a failed attempt, to try
// again after DelayMs, and what became of the wait.
type Retry struct {
	RetryID    string `json:"retryId"`
	Retry      int    `json:"retry"`
	MaxRetries int    `json:"maxRetries"`
	Policy     string `json:"policy,omitempty"`
	// PolicyRetry numbers the retry within its policy, whose budget is
	// MaxRetries; Retry numbers it within the chain.
	PolicyRetry int       `json:"policyRetry,omitempty"`
	Action      string    `json:"action,omitempty"`
	DelayMs     int64     `json:"delayMs"` // the wait scheduled
	At          time.Time `json:"at"`      // when it was scheduled
	AtMs        int64     `json:"atMs"`    // At relative to the turn's start
	Wait        string    `json:"wait"`    // WaitDone, WaitCancelled, WaitFailed, WaitInterrupted or WaitOpen
	WaitedMs    *int64    `json:"waitedMs,omitempty"`
	// HeldBy, of a hold (policy shared), is who learnt the limit: self,
	// another chat, another Rebound process; HoldReason is cooldown or
	// pacing.
	HeldBy     string `json:"heldBy,omitempty"`
	HoldReason string `json:"holdReason,omitempty"`
	// after is how many of the turn's steps had started before it (a hold).
	after int
}

// Compaction is a compaction of a step's request to fit the context window.
type Compaction struct {
	Step         int `json:"step,omitempty"` // the step whose request was compacted
	Replaced     int `json:"replaced"`       // how many messages the summary stands for
	SummaryChars int `json:"summaryChars"`
	// Failed says why the compaction replaced nothing (its summary failed,
	// did not finish, or would not have made the request smaller).
	Failed string    `json:"failed,omitempty"`
	At     time.Time `json:"at"`
	AtMs   int64     `json:"atMs"` // relative to the turn's start
	// after is how many of the turn's steps had started before it, which
	// places it among them even when a fake clock gives them all one time.
	after int
}

// Totals counts a turn's (or a session's) attempts and waits.
type Totals struct {
	Turns     int   `json:"turns,omitempty"` // for the session only
	Attempts  int   `json:"attempts"`
	Failed    int   `json:"failed"` // attempts that failed (not counting cancelled, interrupted or open ones)
	Retries   int   `json:"retries"`
	WaitedMs  int64 `json:"waitedMs"`  // time actually spent waiting for retries
	ElapsedMs int64 `json:"elapsedMs"` // from turn/start to the turn's End
}

// Read is Load for a log that is no file: a pipe, standard input. name
// stands for its path in errors and in the timeline.
func Read(r io.Reader, name string) (*Timeline, error) {
	ld, err := session.Parse(r, name)
	if err != nil {
		return nil, err
	}
	tl, err := Build(ld.Events)
	if err != nil {
		return nil, err
	}
	tl.Session.Log = name
	tl.Warnings = ld.Warnings
	return tl, nil
}

// Load reads, checks and builds the timeline of the log at path. Repairs and
// loose ends the loader reports become Warnings; a log that breaks an
// invariant gives the *session.InvariantError naming the line.
func Load(path string) (*Timeline, error) {
	ld, err := session.Load(path)
	if err != nil {
		return nil, err
	}
	tl, err := Build(ld.Events)
	if err != nil {
		return nil, err
	}
	tl.Session.Log = path
	tl.Warnings = ld.Warnings
	return tl, nil
}

// Build makes the timeline of a session's events, in log order. The events
// are checked first, so a broken log is refused with a
// *session.InvariantError (whose Line is then the 1-based event index)
// instead of drawn wrongly.
func Build(events []session.Event) (*Timeline, error) {
	if _, err := session.Conversation(events); err != nil {
		return nil, err
	}
	b := &builder{tl: &Timeline{Turns: []*Turn{}}, waits: map[int64]session.RetryWait{}}
	for _, w := range session.RetryWaits(events) {
		b.waits[w.Seq] = w
	}
	for i, ev := range events {
		if err := b.add(events, i, ev); err != nil {
			return nil, &session.InvariantError{Line: i + 1, Seq: ev.Seq, Msg: fmt.Sprintf("%s: %v", ev.Type, err)}
		}
	}
	if b.turn != nil {
		// The log ends inside a turn.
		b.finish(events[len(events)-1].Time, Outcome{Status: TurnOpen})
	}
	for _, t := range b.tl.Turns {
		b.tl.Totals.Turns++
		b.tl.Totals.Attempts += t.Totals.Attempts
		b.tl.Totals.Failed += t.Totals.Failed
		b.tl.Totals.Retries += t.Totals.Retries
		b.tl.Totals.WaitedMs += t.Totals.WaitedMs
		b.tl.Totals.ElapsedMs += t.Totals.ElapsedMs
	}
	b.tl.Usage = b.sessionUsage()
	return b.tl, nil
}

type builder struct {
	tl   *Timeline
	turn *Turn // the open turn
	// last is the time of the last event of the open turn, which ends an
	// interrupted or open turn.
	last time.Time
	// waits are how the retries' waits went, by their llm/retry's seq.
	waits map[int64]session.RetryWait
	// cost is the last step usage that recorded a cumulative cost, in any
	// turn so far: what a turn's cost is measured from.
	cost *StepUsage
	// fellBack: the open turn's overload fallback switched models, so its
	// later steps run the fallback model.
	fellBack bool
}

// actionFallback is the llm/retry action of the overload fallback
// (recovery.ActionFallback).
const actionFallback = "fallback"

// add adds event i of events to the timeline: each kind has its own
// method, below.
func (b *builder) add(events []session.Event, i int, ev session.Event) error {
	switch ev.Type {
	case session.TypeSessionStart:
		return b.sessionStart(ev)
	case session.TypeTurnStart:
		return b.turnStart(ev)
	case session.TypeMode, session.TypeConfig:
		// A mode or model change may come between turns or between a turn's steps;
		// the timeline shows what the steps did, not the mode.
		return nil
	}
	// Everything else belongs to the open turn, which the check guarantees.
	t := b.turn
	if t == nil {
		return fmt.Errorf("outside a turn")
	}
	if ev.Type != session.TypeTurnEnd {
		b.last = ev.Time
	}
	switch ev.Type {
	case session.TypeStepStart:
		return b.stepStart(t, ev)
	case session.TypeAssistantChunk:
		return chunk(t, ev)
	case session.TypeAssistantMessage:
		return message(t, ev)
	case session.TypeStepEnd:
		return stepEnd(t, ev)
	case session.TypeToolCall, session.TypePermission, session.TypePlan, session.TypeToolResult:
		return toolEvent(t, ev)
	case session.TypeLLMRetry:
		return b.retry(t, ev)
	case session.TypeCompaction:
		return compaction(t, ev)
	case session.TypeTurnEnd:
		return b.turnEnd(events, i, ev)
	}
	return nil
}

func (b *builder) sessionStart(ev session.Event) error {
	d, err := decode[session.SessionStart](ev)
	if err != nil {
		return err
	}
	b.tl.Session = Session{ID: d.SessionID, Cwd: d.Cwd, Model: d.Model, AgentVersion: d.AgentVersion, Start: ev.Time}
	return nil
}

func (b *builder) turnStart(ev session.Event) error {
	d, err := decode[session.TurnStart](ev)
	if err != nil {
		return err
	}
	b.turn = &Turn{Turn: d.Turn, Prompt: d.Text, Start: ev.Time, OffsetMs: ms(ev.Time.Sub(b.tl.Session.Start)), Steps: []*Step{}}
	b.tl.Turns = append(b.tl.Turns, b.turn)
	b.last, b.fellBack = ev.Time, false
	return nil
}

func (b *builder) stepStart(t *Turn, ev session.Event) error {
	d, err := decode[session.StepStart](ev)
	if err != nil {
		return err
	}
	// The recorded decision says why the model is what it is: a model
	// differing from the session's may be the user's choice.
	t.Steps = append(t.Steps, &Step{Step: d.Step, Model: d.Model, Fallback: b.fellBack, Start: ev.Time, End: ev.Time,
		StartMs: ms(ev.Time.Sub(t.Start)), Outcome: StepOpen})
	return nil
}

func chunk(t *Turn, ev session.Event) error {
	d, err := decode[session.AssistantChunk](ev)
	if err != nil {
		return err
	}
	if s := t.step(d.Step); s != nil {
		n := utf8.RuneCountInString(d.Text) + utf8.RuneCountInString(d.Reasoning)
		if d.Shown {
			s.ShownChars += n
		} else {
			s.StreamedChars += n
		}
	}
	return nil
}

func message(t *Turn, ev session.Event) error {
	d, err := decode[session.AssistantMessage](ev)
	if err != nil {
		return err
	}
	if s := t.step(d.Step); s != nil {
		s.Reply = text.ClipChars(d.Text, ReplyPreview)
		s.ReplyChars = utf8.RuneCountInString(d.Text)
		s.ReasoningChars = utf8.RuneCountInString(d.Reasoning)
		s.FinishReason, s.MessageID, s.Incomplete = d.FinishReason, d.MessageID, d.Incomplete
		for _, tc := range d.ToolCalls {
			s.Tools = append(s.Tools, Tool{ID: tc.ID, Name: tc.Name})
		}
	}
	return nil
}

func stepEnd(t *Turn, ev session.Event) error {
	d, err := decode[session.StepEnd](ev)
	if err != nil {
		return err
	}
	s := t.step(d.Step)
	if s == nil {
		return fmt.Errorf("step %d was never started", d.Step)
	}
	s.End, s.Outcome = ev.Time, d.Outcome
	if d.StreamedChars > 0 || d.ShownChars > 0 {
		// The log keeps no chunks; older logs did, and were counted.
		s.StreamedChars, s.ShownChars = d.StreamedChars, d.ShownChars
	}
	if f := failure(d.Failure); f != nil {
		s.Failure = f
	}
	if u := d.Usage; u != nil {
		s.Usage = &StepUsage{Used: u.Used, Size: u.Size, Estimated: u.Estimated, PromptTokens: u.PromptTokens,
			CompletionTokens: u.CompletionTokens, CachedTokens: u.CachedTokens, Cost: u.Cost, Currency: u.Currency}
	}
	return nil
}

// toolEvent adds what the log says of a tool call of a committed step: how
// it was shown, the user's answer, a plan it set, how it ended.
func toolEvent(t *Turn, ev session.Event) error {
	var id string
	var set func(*Tool)
	switch ev.Type {
	case session.TypeToolCall:
		d, err := decode[session.ToolCall](ev)
		if err != nil {
			return err
		}
		id, set = d.ToolCallID, func(tc *Tool) { tc.Title = d.Title }
	case session.TypePermission:
		d, err := decode[session.Permission](ev)
		if err != nil {
			return err
		}
		id, set = d.ToolCallID, func(tc *Tool) { tc.Permission = d.Outcome }
	case session.TypePlan:
		d, err := decode[session.Plan](ev)
		if err != nil {
			return err
		}
		id, set = d.ToolCallID, func(tc *Tool) { tc.Plan = planDone(d) }
	default: // session.TypeToolResult
		d, err := decode[session.ToolResult](ev)
		if err != nil {
			return err
		}
		id, set = d.ToolCallID, func(tc *Tool) { tc.Status = d.Status }
	}
	if tc := t.pendingTool(id); tc != nil {
		set(tc)
	}
	return nil
}

// planDone is a plan's progress: "2 of 5 done".
func planDone(p session.Plan) string {
	done := 0
	for _, e := range p.Entries {
		if e.Status == "completed" {
			done++
		}
	}
	return fmt.Sprintf("%d of %d done", done, len(p.Entries))
}

// retry adds an llm/retry to the step that failed, with how its wait went
// (session.Recoveries, the derivation /status and replay read too).
func (b *builder) retry(t *Turn, ev session.Event) error {
	d, err := decode[session.LLMRetry](ev)
	if err != nil {
		return err
	}
	if d.Action == actionFallback {
		b.fellBack = true
	}
	r := &Retry{RetryID: d.RetryID, Retry: d.Retry, MaxRetries: d.MaxRetries, Policy: d.Policy, PolicyRetry: d.PolicyRetry, Action: d.Action,
		DelayMs: d.DelayMs, At: ev.Time, AtMs: ms(ev.Time.Sub(t.Start))}
	if d.Policy == recovery.PolicyShared {
		return b.hold(t, ev, d, r)
	}
	// The retry belongs to the step that failed; the log does not check
	// that number, so fall back to the latest step rather than lose it.
	s := t.step(d.Step)
	if s == nil && len(t.Steps) > 0 {
		s = t.Steps[len(t.Steps)-1]
	}
	switch {
	case s != nil:
		s.Retry = r
		if s.Failure == nil {
			s.Failure = failure(d.Failure)
		}
	case d.Step == 0 && t.Wait == nil:
		t.Wait = r // before any attempt: /retry wait
	default:
		return fmt.Errorf("retry %d of chain %q follows no step", d.Retry, d.RetryID)
	}
	w := b.waits[ev.Seq]
	r.Wait = w.End
	if w.Known {
		waited := ms(w.Waited)
		r.WaitedMs = &waited
	}
	return nil
}

// hold adds a wait on the shared rate limit r (recorded as d) to the turn,
// before the attempt that follows it.
func (b *builder) hold(t *Turn, ev session.Event, d session.LLMRetry, r *Retry) error {
	var f struct {
		Held *recovery.Held `json:"held"`
	}
	if json.Unmarshal(d.Failure, &f) == nil && f.Held != nil {
		r.HeldBy, r.HoldReason = f.Held.By, f.Held.Reason
	}
	r.after = len(t.Steps)
	w := b.waits[ev.Seq]
	r.Wait = w.End
	if w.Known {
		waited := ms(w.Waited)
		r.WaitedMs = &waited
	}
	t.Holds = append(t.Holds, r)
	return nil
}

func compaction(t *Turn, ev session.Event) error {
	d, err := decode[session.Compaction](ev)
	if err != nil {
		return err
	}
	t.Compactions = append(t.Compactions, Compaction{Step: d.Step, Replaced: d.Replaced, Failed: d.Failed,
		SummaryChars: utf8.RuneCountInString(d.Summary), At: ev.Time, AtMs: ms(ev.Time.Sub(t.Start)), after: len(t.Steps)})
	return nil
}

func (b *builder) turnEnd(events []session.Event, i int, ev session.Event) error {
	d, err := decode[session.TurnEnd](ev)
	if err != nil {
		return err
	}
	o := Outcome{StopReason: d.StopReason, Error: failure(d.Error)}
	end := ev.Time
	switch {
	case d.Interrupted:
		o.Status = TurnInterrupted
		end = b.interruptedEnd(events, i)
	case o.Error != nil:
		o.Status = TurnFailed
	case d.StopReason == stopCancelled:
		o.Status = TurnCancelled
	default:
		o.Status = TurnCompleted
	}
	b.finish(end, o)
	return nil
}

// interruptedEnd handles the events a later process wrote to close a turn
// its predecessor left open (agent.closeInterrupted): the turn/end at i and,
// if the step was open, an ABORTED step/end just before it. Their times are
// the reload's, so the turn really ended at the last event before them, and
// the step they close was interrupted, not failed.
func (b *builder) interruptedEnd(events []session.Event, i int) time.Time {
	t := b.turn
	if i < 2 || events[i-1].Type != session.TypeStepEnd || len(t.Steps) == 0 {
		return b.last
	}
	s := t.Steps[len(t.Steps)-1]
	if s.Outcome != session.OutcomeFailed || s.Failure == nil || s.Failure.Code != "ABORTED" || !s.End.Equal(events[i-1].Time) {
		return b.last
	}
	end := events[i-2].Time
	s.End, s.Outcome = end, StepInterrupted
	return end
}

// finish closes the open turn: steps and waits the log left without an end
// take theirs from the turn's, and the totals are counted.
func (b *builder) finish(end time.Time, o Outcome) {
	t := b.turn
	t.End, t.Outcome = end, o
	for _, s := range t.Steps {
		if s.Outcome == StepOpen && o.Status != TurnOpen {
			s.Unclosed = true
			s.End = end
			switch o.Status {
			case TurnCancelled:
				s.Outcome = session.OutcomeCancelled
			case TurnInterrupted:
				s.Outcome = StepInterrupted
			default:
				// A turn that failed with its step open: the turn's error is
				// why the step ended.
				s.Outcome = session.OutcomeFailed
				if s.Failure == nil {
					s.Failure = o.Error
				}
			}
		}
		if s.Outcome == StepOpen {
			s.End = end
		}
		s.DurationMs = ms(s.End.Sub(s.Start))
		t.Totals.Attempts++
		if s.Outcome == session.OutcomeFailed {
			t.Totals.Failed++
		}
		t.Totals.finishRetry(s.Retry)
	}
	t.Totals.finishRetry(t.Wait)
	for _, h := range t.Holds { // waited, and no retry
		if h.WaitedMs != nil {
			t.Totals.WaitedMs += *h.WaitedMs
		}
	}
	t.Totals.ElapsedMs = ms(t.End.Sub(t.Start))
	t.Usage = b.turnUsage(t)
	b.turn = nil
}

// turnUsage sums the usage the turn's steps recorded, and measures its cost
// from the cost recorded before it; nil when no step recorded usage.
func (b *builder) turnUsage(t *Turn) *Usage {
	var u *Usage
	var last *StepUsage // the turn's last costed step
	for _, s := range t.Steps {
		su := s.Usage
		if su == nil {
			continue
		}
		if u == nil {
			u = &Usage{}
		}
		u.Used, u.Size, u.Estimated = su.Used, su.Size, su.Estimated
		u.add(int64(su.PromptTokens), int64(su.CompletionTokens), int64(su.CachedTokens))
		if su.Estimated {
			u.Unreported++
		}
		if su.Cost != nil {
			last = su
		}
	}
	if last == nil {
		return u
	}
	from, cur := 0.0, ""
	if b.cost != nil {
		from, cur = *b.cost.Cost, b.cost.Currency
	}
	b.cost = last
	if cur != "" && cur != last.Currency {
		return u // a difference across currencies is no amount
	}
	if d := *last.Cost - from; d >= 0 && !math.IsInf(d, 0) {
		d = roundCost(d)
		u.Cost, u.Currency = &d, last.Currency
	}
	return u
}

// sessionUsage sums the turns' usage: context from the last turn with
// usage, the cost as last recorded; nil when no turn has usage.
func (b *builder) sessionUsage() *Usage {
	var u *Usage
	for _, t := range b.tl.Turns {
		tu := t.Usage
		if tu == nil {
			continue
		}
		if u == nil {
			u = &Usage{}
		}
		u.Used, u.Size, u.Estimated = tu.Used, tu.Size, tu.Estimated
		u.add(tu.PromptTokens, tu.CompletionTokens, tu.CachedTokens)
		u.Unreported += tu.Unreported
	}
	if u != nil && b.cost != nil {
		c := *b.cost.Cost
		u.Cost, u.Currency = &c, b.cost.Currency
	}
	return u
}

// add sums token counts without wrapping: the log bounds each count to an
// int, not their sum. Negative counts, which the log refuses, count as 0.
func (u *Usage) add(prompt, completion, cached int64) {
	u.PromptTokens = addSat(u.PromptTokens, prompt)
	u.CompletionTokens = addSat(u.CompletionTokens, completion)
	u.CachedTokens = addSat(u.CachedTokens, cached)
}

func addSat(a, b int64) int64 {
	b = max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// roundCost rounds an amount to 1e-10, as the agent rounds the cumulative
// cost, so a difference of two reads 0.0031, not 0.0031000000000000003.
// Amounts too large for that precision are left as they are.
func roundCost(v float64) float64 {
	if math.Abs(v) >= 1e8 {
		return v
	}
	return math.Round(v*1e10) / 1e10
}

// finishRetry counts retry r (none if nil) of a turn.
func (tt *Totals) finishRetry(r *Retry) {
	if r == nil {
		return
	}
	tt.Retries++
	if r.WaitedMs != nil {
		tt.WaitedMs += *r.WaitedMs
	}
}

// step returns the turn's step n, or nil.
func (t *Turn) step(n int) *Step {
	for i := len(t.Steps) - 1; i >= 0; i-- {
		if t.Steps[i].Step == n {
			return t.Steps[i]
		}
	}
	return nil
}

func decode[T any](ev session.Event) (T, error) {
	var v T
	err := session.Unmarshal(ev.Data, &v)
	return v, err
}

// failure decodes failure facts; facts that are absent or not an object
// (the log keeps them opaque) give nil or a failure with only what decoded.
func failure(raw json.RawMessage) *Failure {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var f Failure
	if err := json.Unmarshal(raw, &f); err != nil {
		return &Failure{Code: "UNKNOWN", Message: "undecodable failure facts: " + string(raw)}
	}
	return &f
}

// stopCancelled is ACP's stop reason for a cancelled turn.
const stopCancelled = "cancelled"

func ms(d time.Duration) int64 { return d.Milliseconds() }

// pendingTool is the latest call with this id that has no result yet: ids
// may repeat in later replies once answered.
func (t *Turn) pendingTool(id string) *Tool {
	for si := len(t.Steps) - 1; si >= 0; si-- {
		tools := t.Steps[si].Tools
		for ti := len(tools) - 1; ti >= 0; ti-- {
			if tools[ti].ID == id && tools[ti].Status == "" {
				return &tools[ti]
			}
		}
	}
	return nil
}
