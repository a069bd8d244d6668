package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// compactor carries out a turn's compactions: the overflow recovery's,
// /compact's and compact_at's (autocompact.go). It knows the session, the
// provider and the editor only through the functions and the interface it
// is given, so it is tested with fakes.
type compactor struct {
	overflow  Overflow
	maxTokens int             // provider.max_tokens: the summary request's budget
	limits    recovery.Config // the summary request's watchdogs and time limits
	// provider is the provider in use.
	provider func() llm.Provider
	// record appends an event to the session log, synced.
	record func(typ string, data any) error
	// ed shows a compaction: compaction_update where updates says the
	// editor takes it, and compact_at's notices and status tool call.
	ed      compactionEditor
	updates func() bool
	// lastFill is the session's last known used tokens (lastFill.get);
	// window what is known of a model's context window besides the table.
	lastFill func() (used uint64, known bool)
	window   func(model string) uint64
	// fullTurn is the session's last turn that compacted because the
	// context was nearly full, or tried to (sessionState.fullTurn).
	fullTurn  *int
	log       *zerolog.Logger
	sessionID string
	turn      int
}

// compactionEditor is what of the editor a compaction is shown through
// (the turn's best-effort notify and its status cards, status.go).
type compactionEditor interface {
	notify(ctx context.Context, u acp.SessionUpdate)
	statusNotices() bool
	showStatus(ctx context.Context, st *waitStatus, title, detail string, status acp.ToolCallStatus)
}

// compaction is what one compaction works on.
type compaction struct {
	history []llm.Message // the system prompt, then the session's history as the model gets it
	// rest is what the next request sends after the history (the prompt,
	// the turn's exchange, a continuation), asked only once the summary
	// is made, to tell whether the request got smaller.
	rest  func() []llm.Message
	model string    // the model asked for the summary
	step  int       // the attempt the compaction belongs to, for its record
	start time.Time // when the logical request began: request_deadline counts from it
}

// compact replaces the older history with a summary made by a direct
// provider call (never through the executor, so an overflow of the summary
// request cannot recurse), keeping the system prompt, the newest messages and
// the prompt; it returns the new history. It retries only if the request
// got smaller. It is the one place a model's output replaces history, for
// /compact, compact_at and the overflow recovery alike: the summary is used
// only when the model finished it (summarise); otherwise the history stays
// as it was, nothing is recorded, and the editor's compaction ends failed
// with the reason.
func (c *compactor) compact(ctx context.Context, in compaction) ([]llm.Message, error) {
	body := in.history[1:] // after the system prompt
	keep := min(c.overflow.KeepRecentMessages, len(body))
	// The kept messages must not begin with a tool result: its call would
	// be in the summary, and strict providers refuse a result that answers
	// no call of the message before it. The cut moves past such results
	// (into the summary), since a tool's output is what most often fills
	// the window.
	for keep > 0 && body[len(body)-keep].Role == llm.RoleTool {
		keep--
	}
	if len(body)-keep == 0 {
		keep = 0 // nothing older than the kept messages: summarise them too
	}
	old := body[:len(body)-keep]
	if len(old) == 0 {
		return nil, ErrPromptTooLong
	}
	id := newID("cmp_")
	c.compactionUpdate(ctx, acp.CompactionStarted(id))
	summary, err := c.summarise(ctx, old, in.model, in.start)
	if err != nil {
		err = fmt.Errorf(compactErrPrefix+"%w", err)
		c.compactionFailed(ctx, in.step, id, 0, 0, err)
		return nil, err
	}
	rest := in.rest()
	history := append([]llm.Message{in.history[0], summaryMessage(summary)}, body[len(body)-keep:]...)
	b, a := chars(in.history)+chars(rest), chars(history)+chars(rest)
	if a >= b {
		err := fmt.Errorf("%w (%d characters before, %d after)", ErrCompactionNotSmaller, b, a)
		c.compactionFailed(ctx, in.step, id, b, a, err)
		return nil, err
	}
	if err := c.record(session.TypeCompaction, session.Compaction{
		Turn: c.turn, Step: in.step, CompactionID: id, Summary: summary, Replaced: len(old), BeforeChars: b, AfterChars: a,
	}); err != nil {
		// The editor was told it began: it is told it ended.
		c.compactionUpdate(ctx, acp.CompactionFailed(id, "Rebound could not record the summary in its session log"))
		return nil, fmt.Errorf("record compaction: %w", err)
	}
	c.compactionUpdate(ctx, acp.CompactionCompleted(id, []acp.ContentBlock{acp.TextBlock(summary)}))
	return history, nil
}

// compactionFailed records a compaction whose summary request was made but
// replaced nothing, as failed with why (the log accounts for every
// provider request), and tells the editor it ended so. A record that cannot
// be written is logged: the compaction has failed either way.
func (c *compactor) compactionFailed(ctx context.Context, step int, id string, before, after int, why error) {
	failed := why.Error()
	if len(failed) > maxCompactionFailed { // it may quote the provider
		failed = strings.ToValidUTF8(failed[:maxCompactionFailed], "") + "…"
	}
	if err := c.record(session.TypeCompaction, session.Compaction{
		Turn: c.turn, Step: step, CompactionID: id, BeforeChars: before, AfterChars: after, Failed: failed,
	}); err != nil {
		c.log.Error().Err(err).Str("session", c.sessionID).Msg("could not record the failed compaction")
	}
	c.compactionUpdate(ctx, acp.CompactionFailed(id, why.Error()))
}

// compactionUpdate tells a client that understands compaction about one.
func (c *compactor) compactionUpdate(ctx context.Context, u acp.SessionUpdate) {
	if !c.updates() {
		return
	}
	c.ed.notify(ctx, u)
}

// maxCompactionFailed bounds the reason a failed compaction records.
const maxCompactionFailed = 1000

// compactErrPrefix begins the error of a compaction whose summary failed.
const compactErrPrefix = "compact the conversation: "

// summariseInstruction is the summariser's system prompt.
const summariseInstruction = "Summarise the conversation below for a model that will continue it. Keep every fact, decision, file name, code identifier and open question; drop pleasantries. Write plain prose, no preamble."

// MaxSummaryTime bounds the summary request of a compaction when neither
// attempt_timeout nor request_deadline bounds it sooner.
const MaxSummaryTime = 5 * time.Minute

// summaryLimit is how long the summary request of a logical request that
// began at start may take: the attempt timeout, what is left of the request
// deadline, or MaxSummaryTime, whichever is least, and the setting that
// says so.
func (c *compactor) summaryLimit(start time.Time) (time.Duration, string) {
	limit, why := MaxSummaryTime, "Rebound's limit for a summary"
	if at := c.limits.AttemptTimeout; at > 0 && at < limit {
		limit, why = at, "attempt_timeout"
	}
	if rd := c.limits.RequestDeadline; rd > 0 {
		if left := time.Until(start.Add(rd)); left < limit {
			limit, why = left, fmt.Sprintf("what was left of request_deadline %s", rd)
		}
	}
	return limit, why
}

// summarise asks model, through the provider, for a summary of msgs,
// directly (never through the executor) but under the same watchdogs as
// every attempt, and within summaryLimit: a provider that never answers
// ends the compaction, and the recovery, with the reason.
func (c *compactor) summarise(ctx context.Context, msgs []llm.Message, model string, start time.Time) (string, error) {
	limit, why := c.summaryLimit(start)
	if limit <= 0 {
		return "", fmt.Errorf("no time was left for the summary request: %s has passed", why)
	}
	expired := fmt.Errorf("the summary request did not finish within %s (%s): %w", limit.Round(time.Millisecond), why, context.DeadlineExceeded)
	ctx, cancel := context.WithTimeoutCause(ctx, limit, expired)
	defer cancel()
	explain := func(err error) error {
		if errors.Is(context.Cause(ctx), expired) {
			return expired
		}
		return fmt.Errorf("the summary request failed: %w", err)
	}
	var transcript strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&transcript, "%s: %s\n\n", m.Role, m.Content)
	}
	s, err := recovery.Watch(ctx, c.provider(), llm.Request{Model: model, MaxTokens: c.maxTokens, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: summariseInstruction},
		{Role: llm.RoleUser, Content: transcript.String()},
	}}, c.limits.Watchdog)
	if err != nil {
		return "", explain(err)
	}
	defer s.Close()
	var reply llm.Reply
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", explain(err)
		}
		if err := reply.Add(ch); err != nil {
			return "", explain(err)
		}
	}
	if !llm.Finished(reply.FinishReason) {
		return "", unfinishedSummary(reply.FinishReason, c.maxTokens)
	}
	if strings.TrimSpace(reply.Content) == "" {
		return "", explain(recovery.ErrEmptyResponse)
	}
	return reply.Content, nil
}

// unfinishedSummary says why a summary that ended with reason is not used,
// and what would help.
func unfinishedSummary(reason string, maxTokens int) error {
	var why string
	switch c := llm.ClassifyFinish(reason); {
	case c == llm.FinishTruncated:
		limit := "the model's output limit"
		if maxTokens > 0 {
			limit = fmt.Sprintf("the output limit (provider.max_tokens = %d)", maxTokens)
		}
		why = fmt.Sprintf("it was cut off at %s; raise provider.max_tokens, or start a new session", limit)
	case c == llm.FinishRefused:
		why = "the provider's content filter stopped it; try another model, or start a new session"
	case c == llm.FinishToolUse:
		why = "the model asked to call a tool instead of finishing it"
	case reason == "":
		why = "the provider's stream ended without saying it had finished, so it may be cut"
	default:
		if len(reason) > 40 { // the provider's word, bounded (%q keeps a cut rune readable)
			reason = reason[:40] + "…"
		}
		why = fmt.Sprintf("it ended with finish_reason %q, which does not say the model finished it", reason)
	}
	return fmt.Errorf("%w: %s", ErrSummaryUnfinished, why)
}

// summaryMessage is how a compaction summary sits in the model's history.
func summaryMessage(summary string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: "Summary of the earlier conversation:\n" + summary}
}

func chars(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}
