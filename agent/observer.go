package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// observer is the editor's half of the recovery observer: it records each
// retry, then shows it (progress in _meta to every client, a notice or a
// status card per wait_status), and shows the turn's other waits and
// give-ups. It knows its turn only through what it is given (a recorder,
// a sender, the current request's facts, the request changer), so a test
// drives it with fakes (observer_test.go).
type observer struct {
	turn      int
	sessionID string
	// record appends an event to the session's log, synced when sync.
	record func(typ string, data any, sync bool) error
	// send is the best-effort send of an update (notifier).
	send func(context.Context, acp.SessionUpdate)
	// facts are the turn's current request, read when a retry is recorded.
	facts func() requestFacts
	// adapt changes the next request for a retry whose action asks it to
	// (turn.adapt).
	adapt     func(context.Context, recovery.Retry) error
	notices   bool   // waits are shown as notices too (wait_status)
	apiKeyEnv string // named in the advice of an auth failure
	log       *zerolog.Logger
	cards     *statusCards   // status tool calls shown for waits (statuscards.go)
	chain     recovery.Chain // the retry chain of the current logical request
	lastMax   int            // the budget of the policy behind the last retry
}

// requestFacts are what the observer reads of the turn's current request.
type requestFacts struct {
	step      int // the current attempt
	model     string
	maxTokens int
	shown     bool // the editor was shown some of the reply
}

var (
	_ recovery.Observer = (*observer)(nil)
	_ recovery.Adapter  = (*observer)(nil)
	_ compactionEditor  = (*observer)(nil)
)

// newObserver completes o with its status cards, which are sent only when
// calls (statusCallsFor) and recorded in any case.
func newObserver(o observer, calls bool) *observer {
	p := &o
	p.cards = &statusCards{turn: o.turn, chains: map[string]*waitStatus{}, record: func(st session.Status) error {
		err := p.record(session.TypeStatus, st, false)
		if err != nil {
			p.log.Error().Err(err).Str("session", p.sessionID).Msg("could not record a status")
		}
		return err
	}}
	if calls {
		p.cards.send = p.send
	}
	return p
}

// Scheduled records the retry durably, then tells the editor: the record is
// what survives a crash during the wait.
func (o *observer) Scheduled(ctx context.Context, r recovery.Retry) error {
	o.chain.ID, o.chain.Retries = r.ID, r.N
	if o.chain.Used == nil {
		o.chain.Used = map[string]int{}
	}
	o.chain.Used[r.Policy] = r.PolicyN
	o.lastMax = r.Max
	f := o.facts()
	ev := session.LLMRetry{
		Turn: o.turn, Step: f.step, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max,
		DelayMs: r.Delay.Milliseconds(), Policy: r.Policy, PolicyRetry: r.PolicyN, Action: string(r.Action),
	}
	if r.Failure != nil {
		ev.Failure = mustJSON(r.Failure)
	}
	if r.Action == recovery.ActionFallback {
		ev.Model = f.model
	}
	if err := o.record(session.TypeLLMRetry, ev, true); err != nil {
		return err
	}
	log := o.log.Info().Str("session", o.sessionID).Int("turn", o.turn).Str("policy", r.Policy).
		Int("retry", r.N).Dur("delay", r.Delay)
	if r.Failure != nil {
		if err := r.Failure.RetryAfterErr(); err != nil {
			o.log.Warn().Err(err).Str("session", o.sessionID).Msg("ignored the provider's Retry-After; using local backoff")
		}
		log = log.Str("code", string(r.Failure.Code)).Str("requestId", r.Failure.RequestID)
	}
	log.Str("action", string(r.Action)).Msg("retry scheduled")
	p := recovery.RetryProgress{Phase: recovery.PhaseScheduled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max, DelayMs: r.Delay.Milliseconds(),
		Failure: r.Failure, Policy: r.Policy, PolicyRetry: r.PolicyN, Action: string(r.Action), Model: ev.Model}
	o.progress(ctx, p)
	// recovery/words.go: the status, the notice and the give-up say it one way.
	w := recovery.Wording{Retry: r, Continuing: f.shown, Model: f.model, MaxTokens: f.maxTokens, At: time.Now(),
		Shared: o.chain.Used[recovery.PolicyShared]}
	o.cards.scheduled(ctx, w)
	if o.notices {
		o.send(ctx, acp.Notice("warning", w.Subject(), w.Description()).
			WithMeta(acp.Meta{RetryMetaKey: p}))
	}
	return nil
}

// Started records that the wait is over and the retry's request goes out.
func (o *observer) Started(ctx context.Context, r recovery.Retry) error {
	if err := o.record(session.TypeLLMRetryStarted, session.LLMRetryStarted{Turn: o.turn, RetryID: r.ID, Retry: r.N}, false); err != nil {
		return err
	}
	o.progress(ctx, recovery.RetryProgress{Phase: recovery.PhaseStarted, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
	o.cards.started(ctx, r)
	return nil
}

// Cancelled tells the editor the pending retry will not happen.
func (o *observer) Cancelled(r recovery.Retry) {
	// The turn's ctx is cancelled; the update must still go out.
	o.progress(context.Background(), recovery.RetryProgress{Phase: recovery.PhaseCancelled, RetryID: r.ID, Retry: r.N, MaxRetries: r.Max})
}

// Adapt changes the next request as a retry's action says (turn.adapt).
func (o *observer) Adapt(ctx context.Context, r recovery.Retry) error { return o.adapt(ctx, r) }

// ownRetry records and announces a retry the agent decides itself (after a
// truncated reply): the same llm/retry and llm/retry-started as the
// executor's, in the same chain, with no wait.
func (o *observer) ownRetry(ctx context.Context, policy string, action recovery.Action, n, maxN int) error {
	if o.chain.ID == "" {
		o.chain.ID = recovery.NewRetryID()
	}
	o.chain.Retries++
	r := recovery.Retry{ID: o.chain.ID, N: o.chain.Retries, Max: maxN, Policy: policy, PolicyN: n, Action: action}
	if err := o.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	if err := o.Started(ctx, r); err != nil {
		return fmt.Errorf("record retry: %w", err)
	}
	return nil
}

// exhausted tells the editor the chain gave up with f.
func (o *observer) exhausted(ctx context.Context, f *recovery.Failure) {
	o.progress(ctx, recovery.RetryProgress{Phase: recovery.PhaseExhausted, RetryID: o.chain.ID, Retry: o.chain.Retries,
		MaxRetries: o.lastMax, Failure: f})
}

// progress sends retry progress as a session_info_update, which every v1
// client accepts; the payload rides in _meta.
func (o *observer) progress(ctx context.Context, p recovery.RetryProgress) {
	o.send(ctx, acp.SessionInfoUpdate("", "").WithMeta(acp.Meta{RetryMetaKey: p}))
}

// notify sends a best-effort status update (compactionEditor).
func (o *observer) notify(ctx context.Context, u acp.SessionUpdate) { o.send(ctx, u) }

// statusNotices reports whether waits are shown as notices in this client.
func (o *observer) statusNotices() bool { return o.notices }

// showStatus records a status, then shows it where statuses are shown as
// tool calls (statuscards.go).
func (o *observer) showStatus(ctx context.Context, st *waitStatus, title, detail string, status acp.ToolCallStatus) {
	o.cards.showStatus(ctx, st, title, detail, status)
}

// recovered closes the open statuses of a request that succeeded.
func (o *observer) recovered(ctx context.Context) { o.cards.recovered(ctx) }

// ended closes the open statuses of a turn that was cancelled or failed
// (statusCards.ended).
func (o *observer) ended(ctx context.Context, cancelled bool, why string) {
	o.cards.ended(ctx, cancelled, why)
}

// refused shows why the provider's content filter refused the prompt: the
// answer's stopReason and _meta carry only the facts, which no editor
// shows a person. Open statuses close with the reason, as at a give-up.
func (o *observer) refused(ctx context.Context, f *recovery.Failure) {
	why, reason := f.Summary()+".", ""
	if f.Message != "" {
		reason = strings.TrimRight(f.Message, ". ") + "."
		why = f.Summary() + ": " + reason
	}
	if advice := f.Advice(o.apiKeyEnv); advice != "" {
		why += " " + advice
		reason = strings.TrimSpace(reason + " " + advice)
	}
	if o.notices {
		o.send(ctx, acp.Notice("warning", f.Summary(), reason).
			WithMeta(acp.Meta{RefusalMetaKey: f}))
	}
	// The title says what happened; the reason is the content.
	o.cards.failed(ctx, f.Summary(), why)
}

// waitMCP waits for the session's MCP servers m, showing the wait while
// they are still starting (a server has up to mcp's start timeout).
func (o *observer) waitMCP(ctx context.Context, m *mcpServers) *mcp.Set {
	if !m.starting() {
		return m.wait(ctx)
	}
	st := &waitStatus{subject: "MCP servers"}
	o.showStatus(ctx, st, "Waiting for the MCP servers to start", "", acp.ToolStatusInProgress)
	set := m.wait(ctx)
	if ctx.Err() != nil {
		o.showStatus(ctx, st, "Waiting for the MCP servers to start: cancelled", "", acp.ToolStatusFailed)
		return set
	}
	o.showStatus(ctx, st, "The MCP servers have started", "", acp.ToolStatusCompleted)
	return set
}

// reportMCP tells the editor about servers that failed to start or died
// since it was last told: a status card (recorded in every client), a
// notice for clients that show them.
func (o *observer) reportMCP(ctx context.Context, failures []mcp.Failure) {
	for _, f := range failures {
		why := fmt.Sprintf("MCP server %q is not available: %v. The session goes on without its tools.", f.Server, f.Err)
		o.showStatus(ctx, &waitStatus{}, why, why, acp.ToolStatusFailed)
		if !o.notices {
			continue
		}
		o.send(ctx, acp.Notice("warning",
			fmt.Sprintf("MCP server %q is not available", f.Server),
			fmt.Sprintf("%v. The session goes on without its tools.", f.Err),
		))
	}
}
