package agent

import (
	"context"

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
	w := t.wording(r)
	t.cards().scheduled(ctx, w)
	if t.statusNotices() {
		t.notify(ctx, acp.Notice("warning", w.Subject(), w.Description()).
			WithMeta(acp.Meta{RetryMetaKey: p}))
	}
	return nil
}

// Started records that the wait is over and the retry's request goes out.
func (t *turn) Started(ctx context.Context, r recovery.Retry) error {
	if _, err := t.s.append(session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: t.number, RetryID: r.ID, Retry: r.N}); err != nil {
		return err
	}
	t.progress(ctx, recovery.RetryProgress{Phase: recovery.PhaseStarted, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
	t.cards().started(ctx, r)
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
