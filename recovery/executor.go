package recovery

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
)

// Config is everything recovery needs for one turn.
type Config struct {
	Policy          Policy        // the default, transient policy
	Rules           []Rule        // tried first, in order; the first match owns the failure
	Overflow        bool          // compact once on CONTEXT_OVERFLOW
	FallbackModel   string        // "" = no overload fallback
	FallbackAfter   int           // consecutive OVERLOADED failures before switching
	RequestDeadline time.Duration // one logical request: its attempts and the waits between them; 0 = none
	AttemptTimeout  time.Duration // one provider request; 0 = none
	Watchdog        Timeouts
}

// Action is what a retry changes in the next request.
type Action string

const (
	ActionNone        Action = ""
	ActionCompact     Action = "compact"      // summarise older history (context overflow)
	ActionFallback    Action = "fallback"     // switch to the fallback model
	ActionStripImages Action = "strip_images" // replace images with text placeholders
)

// Policy names, as recorded in llm/retry and shown to editors.
const (
	PolicyTransient = "transient"
	PolicyOverflow  = "overflow"
	PolicyFallback  = "fallback"
	PolicyImages    = "images"
)

// imageCodes are provider error codes that say the model takes no images.
var imageCodes = map[string]bool{
	"image_not_supported": true, "images_not_supported": true, "image_input_not_supported": true, "unsupported_image": true,
}

// Retry is one scheduled retry of a recovery sequence.
type Retry struct {
	ID      string // one id per chain
	N       int    // 1-based within the chain, across policies
	Max     int    // the deciding policy's budget
	Delay   time.Duration
	Failure *Failure
	Policy  string // which policy decided: transient, rule:N, overflow, fallback
	PolicyN int    // 1-based retry number within that policy
	Action  Action
}

// Chain is the recovery sequence a logical request continues: its id, how
// many retries it numbered, and how many each policy used since the last
// success. The zero Chain starts a new one. Used nil means all of Retries
// were transient.
type Chain struct {
	ID      string
	Retries int
	Used    map[string]int
}

// Observer is told about each retry. Scheduled runs before the wait and must
// make the retry durable: if it fails, recovery stops rather than wait
// unrecorded.
type Observer interface {
	Scheduled(ctx context.Context, r Retry) error
	Started(ctx context.Context, r Retry) error
	Cancelled(r Retry)
}

// Adapter changes the next request for a retry whose Action is not
// ActionNone. An Observer that is not an Adapter gets no such retries.
// An error ends recovery: the request could not be changed (a prompt too long
// to compact, say) and is returned inside the GiveUpError.
type Adapter interface {
	Adapt(ctx context.Context, r Retry) error
}

// Typed endings of the request-changing recoveries.
var (
	// ErrOverflowAgain: the request overflowed the context again after it was
	// compacted.
	ErrOverflowAgain = errors.New("the conversation is still too long for the model after compacting it")
)

// GiveUpError ends a recovery that did not succeed. Failure holds the facts
// a person and a program need; Err is the last attempt's error.
type GiveUpError struct {
	Failure  *Failure
	Attempts int
	Elapsed  time.Duration
	Retries  int    // retries this sequence used, including earlier processes
	Why      string // "not retryable", "retries exhausted", a Retry-After or deadline explanation
	Err      error

	reasonOf *Failure // whose message is the provider's reason, when not Failure's
}

func (e *GiveUpError) Error() string { return e.Message() }
func (e *GiveUpError) Unwrap() error { return e.Err }

// Message says in a sentence what happened and the provider's reason, e.g.
// "Rate limited by the provider (429); gave up after 2 retries in 2.1s:
// Rate limit reached for gpt-4o …".
func (e *GiveUpError) Message() string {
	f := e.Failure
	reason := cmp.Or(e.reasonOf, f).reason()
	switch {
	case e.Why == "not retryable":
		return f.Summary() + ": " + f.Message
	case e.Why == "retries exhausted":
		return f.Summary() + "; " + GaveUp(e.Retries, e.Elapsed) + reason // words.go
	}
	return f.Summary() + "; " + e.Why + reason
}

// maxReason bounds the provider's reason in a give-up message: enough for
// any provider's sentence, short enough for a one-line error.
const maxReason = 300

// reason is ": " and the provider's message on one line, cut at maxReason
// runes, or "" when the provider sent none (a dropped connection, a
// timeout: the summary says it all). The message is already redacted.
func (f *Failure) reason() string {
	if !f.FromProvider() {
		return ""
	}
	msg := strings.Join(strings.Fields(f.Message), " ")
	if msg == "" {
		return ""
	}
	if r := []rune(msg); len(r) > maxReason {
		msg = string(r[:maxReason]) + "…"
	}
	return ": " + msg
}

// Executor runs attempts of one logical request until one succeeds, the
// policy gives up, the request deadline would pass, or ctx is cancelled.
type Executor struct {
	Config Config
	Start  time.Time // when the logical request began; the deadline counts from here
	// Gate returns the shared state of the provider bucket the next attempt
	// goes to (asked before each: a fallback changes the model, and so the
	// bucket); nil, or a nil Gate, means none (gate.go).
	Gate func() Gate
	// Origin is who sends the request (the session id): the gate tells a
	// limit this chat reached from one another chat did.
	Origin string
}

// Do runs attempt until it succeeds. A cancelled ctx returns the attempt's
// error (or ctx's cause during a wait) at once; every other failure that ends
// the sequence is a *GiveUpError.
func (e *Executor) Do(ctx context.Context, chain Chain, obs Observer, attempt func(ctx context.Context) error) error {
	var deadline time.Time
	if e.Config.RequestDeadline > 0 {
		deadline = e.Start.Add(e.Config.RequestDeadline)
	}
	used := maps.Clone(chain.Used)
	if used == nil {
		used = map[string]int{PolicyTransient: chain.Retries}
	}
	overloads := 0 // consecutive OVERLOADED failures
	adapter, canAdapt := obs.(Adapter)
	for attempts := 1; ; attempts++ {
		var gate Gate
		if e.Gate != nil {
			gate = e.Gate()
		}
		release := func() {}
		if gate != nil {
			if err := e.hold(ctx, gate, &chain, used, obs, deadline, attempts); err != nil {
				return err
			}
			var err error
			if release, err = e.slot(ctx, gate, chain, used, deadline, attempts); err != nil {
				return err
			}
		}
		err := e.try(ctx, gate, attempt)
		release() // the attempt's stream has ended
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		f := Classify(err)
		if f.Code == Overloaded {
			overloads++
		} else {
			overloads = 0 // a rate limit, an overflow, anything else breaks the run
		}
		giveUp := func(f *Failure, why string, cause error) error {
			return &GiveUpError{Failure: f, Attempts: attempts, Elapsed: time.Since(e.Start), Retries: retries(chain, used), Why: why, Err: cause}
		}
		d := e.decide(f, used, overloads, canAdapt)
		if !d.Retry {
			cause := err
			if d.cause != nil {
				cause = fmt.Errorf("%w: %w", d.cause, err)
			}
			return giveUp(f, d.Why, cause)
		}
		// A wait that ends at the deadline or after it leaves the retry no
		// time: fail now rather than sleep into a certain timeout.
		if !deadline.IsZero() && !time.Now().Add(d.Delay).Before(deadline) {
			g := giveUp(&Failure{Code: Timeout, Message: fmt.Sprintf(
				"waiting %s to retry would pass the request deadline (%s) after: %s", d.Delay, e.Config.RequestDeadline, f.Summary()),
				RequestID: f.RequestID}, fmt.Sprintf("retrying in %s would pass the request deadline (%s)", d.Delay, e.Config.RequestDeadline), err)
			g.(*GiveUpError).reasonOf = f // the provider's reason, not the deadline's
			return g
		}
		id := chain.ID
		if id == "" {
			id = NewRetryID()
		}
		r := Retry{ID: id, N: chain.Retries + 1, Max: d.max, Delay: d.Delay, Failure: f,
			Policy: d.policy, PolicyN: used[d.policy] + 1, Action: d.action}
		if r.Action != ActionNone {
			// A request that cannot be changed is no retry: nothing is counted.
			if err := adapter.Adapt(ctx, r); err != nil {
				if ctx.Err() != nil {
					return err
				}
				return giveUp(f, err.Error(), err)
			}
		}
		chain.ID, chain.Retries = id, r.N
		used[d.policy] = r.PolicyN
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

// decision is Decision plus which policy made it.
type decision struct {
	Decision
	policy string
	max    int
	action Action
	cause  error // a typed reason to give up, wrapped into the error
}

// decide asks the policies in order: the user's rules (the first match owns
// the failure), overflow compaction, overload fallback, then the transient
// policy. Each counts only its own retries since the last success.
func (e *Executor) decide(f *Failure, used map[string]int, overloads int, canAdapt bool) decision {
	c := e.Config
	for i, rule := range c.Rules {
		match, err := compileMatch(rule.Match)
		if err != nil || !match(f) {
			continue
		}
		name := fmt.Sprintf("rule:%d", i+1)
		if rule.Action != ActionNone && !canAdapt {
			continue
		}
		if used[name] >= rule.MaxRetries {
			why := fmt.Sprintf("rule %d (%s) allows no more retries", i+1, rule.Match)
			if rule.MaxRetries == 0 {
				why = fmt.Sprintf("rule %d (%s) reports it at once", i+1, rule.Match)
			}
			return decision{Decision: Decision{Why: why}}
		}
		delay := rule.Delay
		if f.RetryAfterMs != nil {
			ra := time.Duration(*f.RetryAfterMs) * time.Millisecond
			if ra > c.Policy.MaxRetryAfter {
				return decision{Decision: Decision{Why: tooLong(f, c.Policy.MaxRetryAfter)}}
			}
			delay = max(delay, ra)
		}
		return decision{Decision: Decision{Retry: true, Delay: delay}, policy: name, max: rule.MaxRetries, action: rule.Action}
	}
	if f.Code == InvalidRequest && imageCodes[strings.ToLower(f.ProviderCode)] && canAdapt {
		if used[PolicyImages] >= 1 {
			return decision{Decision: Decision{Why: "the model still rejects the request after its images were removed"}}
		}
		return decision{Decision: Decision{Retry: true}, policy: PolicyImages, max: 1, action: ActionStripImages}
	}
	if f.Code == ContextOverflow && c.Overflow && canAdapt {
		if used[PolicyOverflow] >= 1 {
			return decision{Decision: Decision{Why: ErrOverflowAgain.Error()}, cause: ErrOverflowAgain}
		}
		return decision{Decision: Decision{Retry: true}, policy: PolicyOverflow, max: 1, action: ActionCompact}
	}
	if f.Code == Overloaded && c.FallbackModel != "" && canAdapt && overloads >= max(c.FallbackAfter, 1) && used[PolicyFallback] < 1 {
		return decision{Decision: Decision{Retry: true, Delay: c.Policy.InitialDelay}, policy: PolicyFallback, max: 1, action: ActionFallback}
	}
	d := c.Policy.Decide(f, used[PolicyTransient]+1)
	return decision{Decision: d, policy: PolicyTransient, max: c.Policy.MaxRetries}
}

// retries is how many retries chain made: its numbered waits less the
// shared ones, which are no retries.
func retries(chain Chain, used map[string]int) int { return max(chain.Retries-used[PolicyShared], 0) }

// try runs one attempt under the attempt timeout, if one is set, with
// gate (if any) in its ctx for the HTTP layer to tell what the provider
// answered. The request deadline does not cut an attempt: it bounds
// recovery (the waits, and the time failed attempts took), never a healthy
// stream that is still producing; a stream that stalls is the watchdogs'
// to end.
func (e *Executor) try(ctx context.Context, gate Gate, attempt func(context.Context) error) error {
	if gate != nil {
		ctx = WithGate(ctx, gate, e.Origin)
	}
	t := e.Config.AttemptTimeout
	if t <= 0 {
		return attempt(ctx)
	}
	actx, cancel := context.WithTimeoutCause(ctx, t, ErrAttemptTimeout)
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

// NewRetryID names a new retry chain.
func NewRetryID() string {
	var b [8]byte
	rand.Read(b[:])
	return "retry_" + hex.EncodeToString(b[:])
}

// AsGiveUp returns the GiveUpError in err's chain, if any.
func AsGiveUp(err error) (*GiveUpError, bool) {
	return errors.AsType[*GiveUpError](err)
}
