package recovery

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Waiting on the shared rate limit (issue #33): before each attempt the
// executor asks the bucket's Gate whether to hold the request. A hold is a
// wait like a retry's: bounded by max_retry_after and the request
// deadline (beyond either, recovery gives up at once, with facts /retry
// wait can wait for), recorded (llm/retry, policy shared) before it
// begins, shown, and cancellable. It is counted in no retry budget: no
// request failed.

// SilentPacing is the longest pacing hold waited without a record or a
// card: spreading requests over what is left of a limit is the normal
// rhythm of a busy bucket, not an incident, and a synced record and a
// card flashing for every request would drown the ones that matter. A
// cooldown this chat learnt and that ends that soon is silent too: it is
// the tail of the wait this chat has just made for its own refusal (a
// reset header a few milliseconds after its Retry-After). Any other
// cooldown is shown: another chat's request was refused.
const SilentPacing = time.Second

// silentHold reports whether a hold of d is waited without a record or a
// card (SilentPacing).
func silentHold(h Held, d time.Duration) bool {
	return d < SilentPacing && (h.Reason == HoldPacing || h.By == HoldBySelf)
}

// hold waits out what gate asks before attempt n, recording and showing
// the wait through obs as a retry's, numbered in chain; it returns a
// GiveUpError when the wait is too long to make, or ctx's cause when ctx
// ends during it.
func (e *Executor) hold(ctx context.Context, gate Gate, chain *Chain, used map[string]int, obs Observer, deadline time.Time, n int) error {
	now := time.Now()
	h := gate.Hold(now, e.Origin)
	// Whole milliseconds, rounded up: the record says what is waited.
	d := h.Until.Sub(now)
	d = (d + time.Millisecond - 1).Truncate(time.Millisecond)
	if h.Until.IsZero() || d <= 0 {
		return nil
	}
	held := Held{Reason: h.Reason, By: h.By}
	if held.Reason != HoldPacing {
		held.Reason = HoldCooldown // what the gate did not name is the stricter
	}
	ms := d.Milliseconds()
	f := &Failure{Code: RateLimit, Message: HoldMessage(held, h.Source), RetryAfterMs: &ms, RetryAfterSource: h.Source, Held: &held}
	giveUp := func(bound string) error {
		return &GiveUpError{Failure: f, Attempts: n - 1, Elapsed: time.Since(e.Start), Retries: retries(*chain, used),
			Why: holdWhy(held, d, h.Source, bound), Err: f}
	}
	if limit := e.Config.Policy.MaxRetryAfter; d > limit {
		return giveUp(fmt.Sprintf("longer than max_retry_after (%s)", limit))
	}
	if !deadline.IsZero() && !now.Add(d).Before(deadline) {
		return giveUp(fmt.Sprintf("which would pass the request deadline (%s)", e.Config.RequestDeadline))
	}
	if silentHold(held, d) {
		return sleep(ctx, d)
	}
	if chain.ID == "" {
		chain.ID = NewRetryID()
	}
	r := Retry{ID: chain.ID, N: chain.Retries + 1, Delay: d, Failure: f, Policy: PolicyShared, PolicyN: used[PolicyShared] + 1}
	chain.Retries, used[PolicyShared] = r.N, r.PolicyN
	if err := obs.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record the wait for the shared rate limit: %w", err)
	}
	if err := sleep(ctx, d); err != nil {
		obs.Cancelled(r)
		return err
	}
	if err := obs.Started(ctx, r); err != nil {
		return fmt.Errorf("record the end of the wait for the shared rate limit: %w", err)
	}
	return nil
}

// errNoSlot: every in-flight slot of the provider stayed taken until the
// request deadline.
var errNoSlot = errors.New("every request slot of the provider (max_in_flight) stayed taken until the request deadline")

// slot takes one of gate's in-flight slots for attempt n, waiting for one
// as long as recovery may wait: until the request deadline, which ends
// recovery with a TIMEOUT, or until ctx ends, which returns its cause.
func (e *Executor) slot(ctx context.Context, gate Gate, chain Chain, used map[string]int, deadline time.Time, n int) (release func(), err error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		actx, cancel = context.WithDeadlineCause(ctx, deadline, errNoSlot)
	}
	defer cancel()
	release, err = gate.Acquire(actx)
	switch {
	case err == nil:
		return release, nil
	case ctx.Err() != nil:
		return nil, context.Cause(ctx)
	case errors.Is(context.Cause(actx), errNoSlot):
		f := &Failure{Code: Timeout, Message: errNoSlot.Error()}
		return nil, &GiveUpError{Failure: f, Attempts: n - 1, Elapsed: time.Since(e.Start), Retries: retries(chain, used),
			Why: fmt.Sprintf("every request slot of the provider (max_in_flight) stayed taken until the request deadline (%s)", e.Config.RequestDeadline), Err: f}
	}
	return nil, fmt.Errorf("wait for a request slot of the provider: %w", err)
}
