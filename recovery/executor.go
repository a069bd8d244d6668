package recovery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Config is everything recovery needs for one turn.
type Config struct {
	Policy         Policy
	TurnDeadline   time.Duration // whole turn, retries and waits included; 0 = none
	AttemptTimeout time.Duration // one provider request; 0 = none
	Watchdog       Timeouts
}

// Retry is one scheduled retry of a recovery sequence.
type Retry struct {
	ID      string // one id per chain
	N       int    // 1-based within the chain
	Max     int
	Delay   time.Duration
	Failure *Failure
}

// Chain is the recovery sequence a logical request continues, as derived
// from the session log: its id and how many retries it already used. The
// zero Chain starts a new one.
type Chain struct {
	ID      string
	Retries int
}

// Observer is told about each retry. Scheduled runs before the wait and must
// make the retry durable: if it fails, recovery stops rather than wait
// unrecorded.
type Observer interface {
	Scheduled(ctx context.Context, r Retry) error
	Started(ctx context.Context, r Retry) error
	Cancelled(r Retry)
}

// GiveUpError ends a recovery that did not succeed. Failure holds the facts
// a person and a program need; Err is the last attempt's error.
type GiveUpError struct {
	Failure  *Failure
	Attempts int
	Elapsed  time.Duration
	Retries  int    // retries this sequence used, including earlier processes
	Why      string // "not retryable", "retries exhausted", a Retry-After or deadline explanation
	Err      error
}

func (e *GiveUpError) Error() string { return e.Message() }
func (e *GiveUpError) Unwrap() error { return e.Err }

// Message says in a sentence what happened, e.g. "Rate limited by the
// provider (429); gave up after 3 attempts in 2.1s".
func (e *GiveUpError) Message() string {
	f := e.Failure
	switch {
	case e.Why == "not retryable":
		return f.Summary() + ": " + f.Message
	case e.Why == "retries exhausted":
		return fmt.Sprintf("%s; gave up after %d %s in %.1fs", f.Summary(), e.Attempts, plural(e.Attempts, "attempt"), e.Elapsed.Seconds())
	}
	return f.Summary() + "; " + e.Why
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Executor runs attempts of one logical request until one succeeds, the
// policy gives up, the turn deadline would pass, or ctx is cancelled.
type Executor struct {
	Config Config
	Start  time.Time // when the turn began; the deadline counts from here
}

// Do runs attempt until it succeeds. A cancelled ctx returns the attempt's
// error (or ctx's cause during a wait) at once; every other failure that ends
// the sequence is a *GiveUpError.
func (e *Executor) Do(ctx context.Context, chain Chain, obs Observer, attempt func(ctx context.Context) error) error {
	var deadline time.Time
	if e.Config.TurnDeadline > 0 {
		deadline = e.Start.Add(e.Config.TurnDeadline)
	}
	p := e.Config.Policy
	for attempts := 1; ; attempts++ {
		err := e.try(ctx, deadline, attempt)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		f := Classify(err)
		giveUp := func(f *Failure, why string) error {
			return &GiveUpError{Failure: f, Attempts: attempts, Elapsed: time.Since(e.Start), Retries: chain.Retries, Why: why, Err: err}
		}
		d := p.Decide(f, chain.Retries+1)
		if !d.Retry {
			return giveUp(f, d.Why)
		}
		if !deadline.IsZero() && time.Now().Add(d.Delay).After(deadline) {
			return giveUp(&Failure{Code: Timeout, Message: fmt.Sprintf(
				"waiting %s to retry would pass the turn deadline (%s) after: %s", d.Delay, e.Config.TurnDeadline, f.Summary()),
				RequestID: f.RequestID}, fmt.Sprintf("retrying in %s would pass the turn deadline (%s)", d.Delay, e.Config.TurnDeadline))
		}
		if chain.ID == "" {
			chain.ID = newRetryID()
		}
		chain.Retries++
		r := Retry{ID: chain.ID, N: chain.Retries, Max: p.MaxRetries, Delay: d.Delay, Failure: f}
		if err := obs.Scheduled(ctx, r); err != nil {
			return fmt.Errorf("record retry %d: %w", r.N, err)
		}
		if err := sleep(ctx, d.Delay); err != nil {
			obs.Cancelled(r)
			return err
		}
		if err := obs.Started(ctx, r); err != nil {
			return fmt.Errorf("record start of retry %d: %w", r.N, err)
		}
	}
}

// try runs one attempt under the attempt timeout and what is left of the
// turn deadline.
func (e *Executor) try(ctx context.Context, deadline time.Time, attempt func(context.Context) error) error {
	if t := e.Config.AttemptTimeout; t > 0 {
		if d := time.Now().Add(t); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	if deadline.IsZero() {
		return attempt(ctx)
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return attempt(actx)
}

// sleep waits d or until ctx is done, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func newRetryID() string {
	var b [8]byte
	rand.Read(b[:])
	return "retry_" + hex.EncodeToString(b[:])
}

// AsGiveUp returns the GiveUpError in err's chain, if any.
func AsGiveUp(err error) (*GiveUpError, bool) {
	return errors.AsType[*GiveUpError](err)
}
