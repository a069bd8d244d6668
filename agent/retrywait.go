package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// /retry wait: when the last turn gave up on a wait the provider named
// (a quota that resets in 40 minutes, a Retry-After beyond
// max_retry_after), wait for it, visibly and cancellably, as Rebound's own
// retries wait, then run the turn again as /retry does.

// policyWait is the policy of the llm/retry a /retry wait records: the wait
// is a retry of the failed request, the user's, with a budget of one.
const policyWait = recovery.PolicyWait

// maxRetryWait bounds what /retry wait waits for: a named time further away
// is a limit to raise or a provider to change, not a wait to sit through.
const maxRetryWait = 24 * time.Hour

// retryWait is the wait a /retry wait runs before the turn: until when, and
// the failure that named the time.
type retryWait struct {
	until   time.Time
	failure *recovery.Failure
}

// retryWaitCommand is /retry wait: the prompt to run again and the wait
// before it, or an answer saying why there is nothing to wait for. A named
// time already past runs the turn at once (wait nil), as /retry does.
func retryWaitCommand(s *sessionState, h *history, now time.Time) (run []acp.ContentBlock, answer string, wait *retryWait) {
	last, ok := lastPrompt(h)
	if !ok || !retryable(last.TurnOutcome) {
		return nil, nothingToRetry, nil
	}
	until, f, ok := namedTime(s.events, last.Turn)
	if !ok {
		// Refused rather than run now: the user asked to wait, and a
		// request now may spend what a quota has left on a refusal.
		return nil, "Nothing to wait for: the last turn's failure named no time to wait until. `/retry` runs it again now.", nil
	}
	if until.Sub(now) > maxRetryWait {
		return nil, fmt.Sprintf("The provider named a time more than %s away (%s), longer than `/retry wait` waits. "+
			"Send `/retry` once the limit has reset, or switch to another model or provider.", recovery.ShortDuration(maxRetryWait), farText(f, until, now)), nil
	}
	run = retryBlocks(last)
	if !until.After(now) {
		return run, "", nil
	}
	return run, "", &retryWait{until: until, failure: f}
}

// retryBlocks is the prompt of the turn /retry runs again.
func retryBlocks(last session.Message) []acp.ContentBlock {
	var blocks []acp.ContentBlock
	if err := json.Unmarshal(last.Prompt, &blocks); err != nil || len(blocks) == 0 {
		blocks = []acp.ContentBlock{acp.TextBlock(last.Text)}
	}
	return blocks
}

// namedTime is when the wait the log says turn's failure named ends: its
// turn/end's error facts (their time plus retryAfterMs), or, for a turn that
// was cancelled or interrupted, its last llm/retry whose failure named a
// wait (the record's time plus its delay: what a /retry wait cancelled or
// cut by a restart had left). ok is false when the turn's failure named no
// time. The times are the log's, so a wait after a restart or a
// session/load waits only what is left.
func namedTime(events []session.Event, turn int) (until time.Time, f *recovery.Failure, ok bool) {
	if end, at, ended := session.TurnError(events, turn); ended && len(end) > 0 {
		// The failure that ended the turn is the last word: one that
		// named no time leaves nothing to wait for.
		ef := failureOf(end)
		if ef == nil || ef.RetryAfterMs == nil || *ef.RetryAfterMs <= 0 {
			return time.Time{}, nil, false
		}
		return addMs(at, *ef.RetryAfterMs), ef, true
	}
	for _, c := range session.Recoveries(events) {
		if c.Turn != turn {
			continue
		}
		for _, w := range c.Waits {
			if rf := failureOf(w.Record.Failure); rf != nil && rf.RetryAfterMs != nil {
				until, f, ok = addMs(w.At, w.Record.DelayMs), rf, true
			}
		}
	}
	return until, f, ok
}

// farMs saturates a named wait: a log's number, or a provider's, may be
// anything, and a year is beyond anything worth a clock time.
const farMs = int64(366 * 24 * time.Hour / time.Millisecond)

// addMs is t plus ms milliseconds, saturating at farMs.
func addMs(t time.Time, ms int64) time.Time {
	return t.Add(time.Duration(min(max(ms, 0), farMs)) * time.Millisecond)
}

// retryWaitHint is the line that ends a failure message when the provider
// named a wait longer than Rebound's own budget (max_retry_after): how to
// wait for it. "" when it named none, or one Rebound would have waited.
func retryWaitHint(f *recovery.Failure, maxRetryAfter time.Duration, now time.Time) string {
	if f == nil || f.RetryAfterMs == nil || *f.RetryAfterMs <= maxRetryAfter.Milliseconds() {
		return ""
	}
	until := addMs(now, *f.RetryAfterMs)
	if until.Sub(now) > maxRetryWait {
		return fmt.Sprintf("That is more than the %s `/retry wait` waits: send `/retry` once the limit has reset (%s), or switch model.",
			recovery.ShortDuration(maxRetryWait), farText(f, until, now))
	}
	return fmt.Sprintf("Type `/retry wait` to wait for it (until %s) and run the turn again.", recovery.ClockText(until, now))
}

// farText says when a wait beyond maxRetryWait ends, or that the provider
// asked for longer than can be said.
func farText(f *recovery.Failure, until, now time.Time) string {
	if f != nil && f.RetryAfterMs != nil && *f.RetryAfterMs >= farMs {
		return "the provider asked for longer than that"
	}
	return "until " + recovery.ClockText(until, now)
}

// waitNamed waits until w.until the way the executor waits for a retry:
// recorded (llm/retry, synced) before the wait and shown through Scheduled
// (the _meta progress, a notice or the status tool call, per wait_status),
// then Started, or Cancelled when the prompt is. The record continues
// chain, the one the log says the request continues (an interrupted turn's).
func (o *observer) waitNamed(ctx context.Context, chain recovery.Chain, w *retryWait) error {
	// Whole milliseconds, rounded up: the record says what is waited.
	d := time.Until(w.until)
	d = (d + time.Millisecond - 1).Truncate(time.Millisecond)
	if d <= 0 {
		return nil
	}
	if chain.ID == "" {
		chain.ID = recovery.NewRetryID()
	}
	o.chain = chain
	r := recovery.Retry{ID: chain.ID, N: chain.Retries + 1, Max: 1, Delay: d, Failure: w.failure, Policy: policyWait, PolicyN: 1}
	if err := o.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record the wait of /retry wait: %w", err)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		o.Cancelled(r)
		return context.Cause(ctx)
	case <-timer.C:
	}
	if err := o.Started(ctx, r); err != nil {
		return fmt.Errorf("record the end of the wait of /retry wait: %w", err)
	}
	return nil
}

// retryWaitStatus is what /status adds about a pending named time: ""
// when the last turn's failure named none, or its time has passed.
func retryWaitStatus(events []session.Event, turn int, now time.Time) string {
	until, _, ok := namedTime(events, turn)
	if !ok || !until.After(now) || until.Sub(now) > maxRetryWait {
		return ""
	}
	return fmt.Sprintf(" `/retry wait` waits until %s (%s from now) and runs it then.", recovery.ClockText(until, now), recovery.ShortDuration(until.Sub(now)))
}
