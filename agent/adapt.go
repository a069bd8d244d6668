package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Errors that end a request-changing recovery.
var (
	// ErrPromptTooLong: the overflowing request has nothing to compact but
	// the prompt itself.
	ErrPromptTooLong = errors.New("the prompt itself is too long for the model, and there is no older history to summarise")
	// ErrCompactionNotSmaller: the summary did not make the request smaller.
	ErrCompactionNotSmaller = errors.New("compacting the conversation did not make the request smaller")
	// ErrNoImages: a provider said the model takes no images, but the
	// request has none to remove.
	ErrNoImages = errors.New("the request has no images to remove")
	// ErrSummaryUnfinished: the summary request ended without the model
	// finishing the summary (cut at the output limit, filtered, ...). A
	// summary that may be cut would become the whole older conversation for
	// every later request, so it is never used.
	ErrSummaryUnfinished = errors.New("the summary did not finish")
)

var _ recovery.Adapter = (*turn)(nil)

// Adapt changes the next request as a retry's action says.
func (t *turn) Adapt(ctx context.Context, r recovery.Retry) error {
	switch r.Action {
	case recovery.ActionFallback:
		t.model, t.fellBack = t.agent.cfg.Recovery.FallbackModel, true
		t.effort = t.agent.effort(t.model, t.s.current().thought)
		t.agent.cfg.Logger.Warn().Str("session", t.s.id).Int("turn", t.number).Str("model", t.model).Msg("switching to the fallback model for this turn")
		return nil
	case recovery.ActionCompact:
		return t.compact(ctx, r)
	case recovery.ActionStripImages:
		return t.stripImages()
	}
	return fmt.Errorf("unknown recovery action %q", r.Action)
}

// compact replaces the older history with a summary made by a direct
// provider call (never through the executor, so an overflow of the summary
// request cannot recurse), keeping the system prompt, the newest messages and
// the prompt. It retries only if the request got smaller. It is the one
// place a model's output replaces history, for /compact, compact_at and the
// overflow recovery alike: the summary is used only when the model finished
// it (summarise); otherwise the history stays as it was, nothing is
// recorded, and the editor's compaction ends failed with the reason.
func (t *turn) compact(ctx context.Context, r recovery.Retry) error {
	body := t.history[1:] // after the system prompt
	keep := min(t.agent.cfg.Overflow.KeepRecentMessages, len(body))
	if len(body)-keep == 0 {
		keep = 0 // nothing older than the kept messages: summarise them too
	}
	old := body[:len(body)-keep]
	if len(old) == 0 {
		return ErrPromptTooLong
	}
	id := newID("cmp_")
	t.compactionUpdate(ctx, acp.CompactionStarted(id))
	summary, err := t.summarise(ctx, old)
	if err != nil {
		err = fmt.Errorf(compactErrPrefix+"%w", err)
		t.compactionFailed(ctx, id, 0, 0, err)
		return err
	}
	before := t.request()
	history := append([]llm.Message{t.history[0], summaryMessage(summary)}, body[len(body)-keep:]...)
	after := before
	after.Messages = append(append([]llm.Message{}, history...), before.Messages[len(t.history):]...)
	b, a := chars(before.Messages), chars(after.Messages)
	if a >= b {
		err := fmt.Errorf("%w (%d characters before, %d after)", ErrCompactionNotSmaller, b, a)
		t.compactionFailed(ctx, id, b, a, err)
		return err
	}
	if _, err := t.s.appendSync(session.TypeCompaction, session.Compaction{
		Turn: t.number, Step: t.attempts, CompactionID: id, Summary: summary, Replaced: len(old), BeforeChars: b, AfterChars: a,
	}); err != nil {
		// The editor was told it began: it is told it ended.
		t.compactionUpdate(ctx, acp.CompactionFailed(id, "Rebound could not record the summary in its session log"))
		return fmt.Errorf("record compaction: %w", err)
	}
	t.history = history
	t.compactionUpdate(ctx, acp.CompactionCompleted(id, []acp.ContentBlock{acp.TextBlock(summary)}))
	return nil
}

// compactionFailed records a compaction whose summary request was made but
// replaced nothing, as failed with why (the log accounts for every
// provider request), and tells the editor it ended so. A record that cannot
// be written is logged: the compaction has failed either way.
func (t *turn) compactionFailed(ctx context.Context, id string, before, after int, why error) {
	failed := why.Error()
	if len(failed) > maxCompactionFailed { // it may quote the provider
		failed = strings.ToValidUTF8(failed[:maxCompactionFailed], "") + "…"
	}
	if _, err := t.s.appendSync(session.TypeCompaction, session.Compaction{
		Turn: t.number, Step: t.attempts, CompactionID: id, BeforeChars: before, AfterChars: after, Failed: failed,
	}); err != nil {
		t.agent.cfg.Logger.Error().Err(err).Str("session", t.s.id).Msg("could not record the failed compaction")
	}
	t.compactionUpdate(ctx, acp.CompactionFailed(id, why.Error()))
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

// summaryLimit is how long the summary request may take: the attempt
// timeout, what is left of the request deadline, or MaxSummaryTime,
// whichever is least, and the setting that says so.
func (t *turn) summaryLimit() (time.Duration, string) {
	limit, why := MaxSummaryTime, "Rebound's limit for a summary"
	rc := t.agent.cfg.Recovery
	if at := rc.AttemptTimeout; at > 0 && at < limit {
		limit, why = at, "attempt_timeout"
	}
	if rd := rc.RequestDeadline; rd > 0 {
		if left := time.Until(t.reqStart.Add(rd)); left < limit {
			limit, why = left, fmt.Sprintf("what was left of request_deadline %s", rd)
		}
	}
	return limit, why
}

// summarise asks the provider for a summary of msgs, directly (never
// through the executor) but under the same watchdogs as every attempt, and
// within summaryLimit: a provider that never answers ends the compaction,
// and the recovery, with the reason.
func (t *turn) summarise(ctx context.Context, msgs []llm.Message) (string, error) {
	limit, why := t.summaryLimit()
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
	s, err := recovery.Watch(ctx, t.agent.currentProvider(), llm.Request{Model: t.model, MaxTokens: t.agent.cfg.MaxTokens, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: summariseInstruction},
		{Role: llm.RoleUser, Content: transcript.String()},
	}}, t.agent.cfg.Recovery.Watchdog)
	if err != nil {
		return "", explain(err)
	}
	defer s.Close()
	var reply llm.Reply
	for {
		c, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", explain(err)
		}
		if err := reply.Add(c); err != nil {
			return "", explain(err)
		}
	}
	if !llm.Finished(reply.FinishReason) {
		return "", unfinishedSummary(reply.FinishReason, t.agent.cfg.MaxTokens)
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

// stripImages drops the prompt's images, which the prompt text already names
// as [image: …] placeholders, and tells the model why. The log keeps the
// user's original prompt.
func (t *turn) stripImages() error {
	if len(t.prompt.Images) == 0 {
		return ErrNoImages
	}
	t.prompt.Content += "\n(Note: the user attached the images named above, but this model cannot receive images, so only their names are given.)"
	t.prompt.Images = nil
	return nil
}

// promptImages collects the prompt's image blocks for the model.
func promptImages(blocks []acp.ContentBlock) []llm.Image {
	var imgs []llm.Image
	for i, b := range blocks {
		if b.Type != "image" || b.Data == "" {
			continue
		}
		imgs = append(imgs, llm.Image{Name: imageName(b, i), MimeType: b.MimeType, Data: b.Data})
	}
	return imgs
}

// imageName is how an image block is named to the model: its URI, else its
// position in the prompt.
func imageName(b acp.ContentBlock, i int) string {
	if b.URI != "" {
		return b.URI
	}
	return fmt.Sprintf("image %d", i+1)
}

// ownRetry records and announces a retry the agent decides itself (after a
// truncated reply): the same llm/retry and llm/retry-started as the
// executor's, in the same chain, with no wait.
func (t *turn) ownRetry(ctx context.Context, policy string, action recovery.Action, n, maxN int) error {
	if t.chain.ID == "" {
		t.chain.ID = recovery.NewRetryID()
	}
	t.chain.Retries++
	r := recovery.Retry{ID: t.chain.ID, N: t.chain.Retries, Max: maxN, Policy: policy, PolicyN: n, Action: action}
	if err := t.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	if err := t.Started(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	return nil
}

// compactionUpdate tells a client that understands compaction about one.
func (t *turn) compactionUpdate(ctx context.Context, u acp.SessionUpdate) {
	if !t.c.Capabilities().Compaction() {
		return
	}
	t.notify(ctx, u)
}
