package agent

import (
	"context"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// RetryMetaKey is the `_meta` key under which retry progress travels on
// session_info_update (every client) and notice (clients that advertised
// session.notices) updates.
const RetryMetaKey = "rebound/retry"

// Retry progress phases.
const (
	phaseScheduled = "scheduled"
	phaseStarted   = "started"
	phaseCancelled = "cancelled"
	phaseExhausted = "exhausted"
)

// RetryProgress is the machine-readable payload of `_meta["rebound/retry"]`.
type RetryProgress struct {
	Phase      string            `json:"phase" jsonschema:"enum=scheduled,enum=started,enum=cancelled,enum=exhausted"`
	RetryID    string            `json:"retryId"`
	Retry      int               `json:"retry" jsonschema_description:"1-based number of the retry within its chain"`
	MaxRetries int               `json:"maxRetries"`
	DelayMs    int64             `json:"delayMs,omitempty" jsonschema_description:"the wait before the retry (scheduled only)"`
	Failure    *recovery.Failure `json:"failure,omitempty" jsonschema_description:"the failure that caused the retry, or ended recovery"`
}

// CapabilitiesMeta is advertised in agentCapabilities._meta so a client can
// tell that retry progress will arrive, and in which shape.
func CapabilitiesMeta() acp.Meta {
	return acp.Meta{RetryMetaKey: map[string]any{"version": 1, "phases": []string{phaseScheduled, phaseStarted, phaseCancelled, phaseExhausted}}}
}

// Scheduled records the retry durably, then tells the editor: the record is
// what survives a crash during the wait.
func (t *turn) Scheduled(ctx context.Context, r recovery.Retry) error {
	t.retryID = r.ID
	if _, err := t.s.appendSync(session.TypeLLMRetry, session.LLMRetry{
		Turn: t.number, Step: t.steps, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max,
		DelayMs: r.Delay.Milliseconds(), Policy: "transient", Failure: mustJSON(r.Failure),
	}); err != nil {
		return err
	}
	if err := r.Failure.RetryAfterErr(); err != nil {
		t.agent.cfg.Logger.Warn().Err(err).Str("session", t.s.id).Msg("ignored the provider's Retry-After; using local backoff")
	}
	t.agent.cfg.Logger.Info().Str("session", t.s.id).Int("turn", t.number).Str("code", string(r.Failure.Code)).
		Int("retry", r.N).Int("maxRetries", r.Max).Dur("delay", r.Delay).Str("requestId", r.Failure.RequestID).Msg("retry scheduled")
	p := RetryProgress{Phase: phaseScheduled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max, DelayMs: r.Delay.Milliseconds(), Failure: r.Failure}
	t.progress(ctx, p)
	if t.c.Capabilities().Notices() {
		t.notify(ctx, acp.SessionUpdate{
			SessionUpdate: acp.UpdateNotice, Severity: "warning",
			Title:       r.Failure.Summary(),
			Description: fmt.Sprintf("Retrying in %.1fs (attempt %d of %d)", r.Delay.Seconds(), r.N+1, r.Max+1),
			Meta:        acp.Meta{RetryMetaKey: p},
		})
	}
	return nil
}

// Started records that the wait is over and the retry's request goes out.
func (t *turn) Started(ctx context.Context, r recovery.Retry) error {
	if _, err := t.s.append(session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: t.number, RetryID: r.ID, Retry: r.N}); err != nil {
		return err
	}
	t.progress(ctx, RetryProgress{Phase: phaseStarted, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
	return nil
}

// Cancelled tells the editor the pending retry will not happen.
func (t *turn) Cancelled(r recovery.Retry) {
	// The turn's ctx is cancelled; the update must still go out.
	t.progress(context.Background(), RetryProgress{Phase: phaseCancelled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
}

// progress sends retry progress as a session_info_update, which every v1
// client accepts; the payload rides in _meta.
func (t *turn) progress(ctx context.Context, p RetryProgress) {
	t.notify(ctx, acp.SessionUpdate{SessionUpdate: acp.UpdateSessionInfo, Meta: acp.Meta{RetryMetaKey: p}})
}

// notify sends a best-effort status update: a client that went away must not
// turn a recovering request into a failed one.
func (t *turn) notify(ctx context.Context, u acp.SessionUpdate) {
	if err := t.c.Update(context.WithoutCancel(ctx), t.s.id, u); err != nil {
		t.agent.cfg.Logger.Debug().Err(err).Str("session", t.s.id).Msg("could not send a status update")
	}
}
