package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// RetryMetaKey is the `_meta` key under which retry progress
// (recovery.RetryProgress) travels on session_info_update (every client)
// and notice (clients that advertised session.notices) updates.
const RetryMetaKey = recovery.ProgressMetaKey

// RefusalMetaKey is the `_meta` key of a prompt answer with stopReason
// "refusal" that the provider's content filter caused: the failure facts,
// whose message is the provider's reason.
const RefusalMetaKey = "rebound/refusal"

// CapabilitiesMeta is advertised in agentCapabilities._meta so a client can
// tell that retry progress will arrive, and in which shape.
func CapabilitiesMeta() acp.Meta {
	return acp.Meta{RetryMetaKey: map[string]any{"version": 1, "phases": recovery.Phases}}
}

// Scheduled records the retry durably, then tells the editor: the record is
// what survives a crash during the wait.
func (t *turn) Scheduled(ctx context.Context, r recovery.Retry) error {
	t.chain.ID, t.chain.Retries = r.ID, r.N
	if t.chain.Used == nil {
		t.chain.Used = map[string]int{}
	}
	t.chain.Used[r.Policy] = r.PolicyN
	t.lastMax = r.Max
	ev := session.LLMRetry{
		Turn: t.number, Step: t.req.attempts, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max,
		DelayMs: r.Delay.Milliseconds(), Policy: r.Policy, PolicyRetry: r.PolicyN, Action: string(r.Action),
	}
	if r.Failure != nil {
		ev.Failure = mustJSON(r.Failure)
	}
	if r.Action == recovery.ActionFallback {
		ev.Model = t.req.model
	}
	if _, err := t.s.appendSync(session.TypeLLMRetry, ev); err != nil {
		return err
	}
	log := t.agent.cfg.Logger.Info().Str("session", t.s.id).Int("turn", t.number).Str("policy", r.Policy).
		Int("retry", r.N).Dur("delay", r.Delay)
	if r.Failure != nil {
		if err := r.Failure.RetryAfterErr(); err != nil {
			t.agent.cfg.Logger.Warn().Err(err).Str("session", t.s.id).Msg("ignored the provider's Retry-After; using local backoff")
		}
		log = log.Str("code", string(r.Failure.Code)).Str("requestId", r.Failure.RequestID)
	}
	log.Str("action", string(r.Action)).Msg("retry scheduled")
	p := recovery.RetryProgress{Phase: recovery.PhaseScheduled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max, DelayMs: r.Delay.Milliseconds(),
		Failure: r.Failure, Policy: r.Policy, PolicyRetry: r.PolicyN, Action: string(r.Action), Model: ev.Model}
	t.progress(ctx, p)
	t.statusScheduled(ctx, r)
	if t.statusNotices() {
		title, desc := t.noticeText(r)
		t.notify(ctx, acp.Notice("warning", title, desc).
			WithMeta(acp.Meta{RetryMetaKey: p}))
	}
	return nil
}

// noticeText is what a person reads about a retry.
func (t *turn) noticeText(r recovery.Retry) (title, description string) {
	return retryText(r, t.out.shownAny(), t.req.model, t.req.maxTokens)
}

// retryText says what a retry is about and what it does: continuing, when
// the stream broke after text was shown; model, the one a fallback
// switches to; maxTokens, the escalated budget (0: not known).
func retryText(r recovery.Retry, continuing bool, model string, maxTokens int) (title, description string) {
	if r.Policy == policyWait { // retrywait.go
		return r.Failure.Summary(), fmt.Sprintf("Waiting %s for the time the provider named, then running the turn again (/retry wait)", shortDuration(r.Delay))
	}
	wait := ""
	if r.Delay > 0 {
		wait = fmt.Sprintf(" in %.1fs", r.Delay.Seconds())
	}
	switch r.Action {
	case recovery.ActionCompact:
		return r.Failure.Summary(), "Summarising older messages and retrying"
	case recovery.ActionFallback:
		return r.Failure.Summary(), fmt.Sprintf("Switching to %s for this turn; retrying%s", model, wait)
	case recovery.ActionStripImages:
		return "The model does not accept images", "Retrying with the images replaced by placeholders"
	case recovery.ActionEscalate:
		if maxTokens == 0 {
			return "The reply was cut at the output limit", "Retrying with a larger output budget"
		}
		return "The reply was cut at the output limit", fmt.Sprintf("Retrying with a larger output budget (%d tokens)", maxTokens)
	case recovery.ActionContinue:
		return "The reply was cut at the output limit", fmt.Sprintf("Asking the model to continue (part %d of at most %d)", r.PolicyN+1, r.Max+1)
	}
	title = r.Failure.Summary()
	description = fmt.Sprintf("Retrying%s (attempt %d of %d)", wait, r.PolicyN+1, r.Max+1)
	if continuing {
		// The stream broke after text was shown: the retry goes on from it.
		description = fmt.Sprintf("Continuing the reply from where it stopped%s (attempt %d of %d)", wait, r.PolicyN+1, r.Max+1)
	}
	if strings.HasPrefix(r.Policy, "rule:") {
		description += ", " + strings.Replace(r.Policy, "rule:", "by rule ", 1)
	}
	if ra := r.Failure.RetryAfterText(); ra != "" {
		description += ": " + ra
	}
	return title, description
}

// Started records that the wait is over and the retry's request goes out.
func (t *turn) Started(ctx context.Context, r recovery.Retry) error {
	if _, err := t.s.append(session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: t.number, RetryID: r.ID, Retry: r.N}); err != nil {
		return err
	}
	t.progress(ctx, recovery.RetryProgress{Phase: recovery.PhaseStarted, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
	t.statusStarted(ctx, r)
	return nil
}

// Cancelled tells the editor the pending retry will not happen.
func (t *turn) Cancelled(r recovery.Retry) {
	// The turn's ctx is cancelled; the update must still go out.
	t.progress(context.Background(), recovery.RetryProgress{Phase: recovery.PhaseCancelled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
}

// progress sends retry progress as a session_info_update, which every v1
// client accepts; the payload rides in _meta.
func (t *turn) progress(ctx context.Context, p recovery.RetryProgress) {
	t.notify(ctx, acp.SessionInfoUpdate("", "").WithMeta(acp.Meta{RetryMetaKey: p}))
}

// notify sends a best-effort status update: a client that went away must not
// turn a recovering request into a failed one.
func (t *turn) notify(ctx context.Context, u acp.SessionUpdate) {
	t.agent.notify(ctx, t.c, t.s.id, u, "could not send a status update")
}

// notify is the one best-effort send of an update: one the editor misses
// (it went away, or its output is stuck) fails nothing, so the error is
// only logged, as failed. A cancelled ctx still sends: the spec lets a
// cancelled turn send its last updates.
func (a *Agent) notify(ctx context.Context, c acp.Client, sessionID string, u acp.SessionUpdate, failed string) {
	if err := c.Update(context.WithoutCancel(ctx), sessionID, u); err != nil {
		a.cfg.Logger.Debug().Err(err).Str("session", sessionID).Msg(failed)
	}
}
