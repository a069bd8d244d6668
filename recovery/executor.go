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
	s := e.begin(chain, obs)
	for s.attempts = 1; ; s.attempts++ {
		gate := e.nextGate()
		release, err := s.admit(ctx, gate)
		if err != nil {
			return err
		}
		err = e.try(ctx, gate, attempt)
		release() // the attempt's stream has ended
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		r, err := s.next(ctx, err)
		if err != nil {
			return err
		}
		if err := s.wait(ctx, r); err != nil {
			return err
		}
	}
}

// sequence is one Do's state: the chain it continues and numbers, the
// retries each policy used in it, and the run of overloads.
type sequence struct {
	e        *Executor
	obs      Observer
	adapter  Adapter // obs, when it can change the request
	canAdapt bool
	deadline time.Time // zero: none
	chain    Chain
	used     map[string]int
	// overloads counts consecutive OVERLOADED failures.
	overloads int
	attempts  int // the number of the attempt running or just failed
}

// begin starts the sequence that continues chain.
func (e *Executor) begin(chain Chain, obs Observer) *sequence {
	s := &sequence{e: e, obs: obs, chain: chain, used: maps.Clone(chain.Used)}
	s.adapter, s.canAdapt = obs.(Adapter)
	if e.Config.RequestDeadline > 0 {
		s.deadline = e.Start.Add(e.Config.RequestDeadline)
	}
	if s.used == nil {
		s.used = map[string]int{PolicyTransient: chain.Retries}
	}
	return s
}

// nextGate is the gate of the bucket the next attempt goes to, nil if none.
func (e *Executor) nextGate() Gate {
	if e.Gate == nil {
		return nil
	}
	return e.Gate()
}

// admit lets the next attempt through gate, if any: it waits out the hold
// the gate asks (hold.go), then takes an in-flight slot, to give back with
// release when the attempt ends.
func (s *sequence) admit(ctx context.Context, gate Gate) (release func(), err error) {
	if gate == nil {
		return func() {}, nil
	}
	if err := s.e.hold(ctx, gate, &s.chain, s.used, s.obs, s.deadline, s.attempts); err != nil {
		return nil, err
	}
	return s.e.slot(ctx, gate, s.chain, s.used, s.deadline, s.attempts)
}

// next decides on err, the failure of the attempt that just ran: the retry
// to make, counted in the chain and with the request already changed when
// its action says so, or the error that ends the sequence.
func (s *sequence) next(ctx context.Context, err error) (Retry, error) {
	f := Classify(err)
	if f.Code == Overloaded {
		s.overloads++
	} else {
		s.overloads = 0 // a rate limit, an overflow, anything else breaks the run
	}
	d := s.e.decide(f, s.used, s.overloads, s.canAdapt)
	if !d.Retry {
		cause := err
		if d.cause != nil {
			cause = fmt.Errorf("%w: %w", d.cause, err)
		}
		return Retry{}, s.giveUp(f, d.Why, cause)
	}
	// A wait that ends at the deadline or after it leaves the retry no
	// time: fail now rather than sleep into a certain timeout.
	if !s.deadline.IsZero() && !time.Now().Add(d.Delay).Before(s.deadline) {
		return Retry{}, s.pastDeadline(f, d.Delay, err)
	}
	id := s.chain.ID
	if id == "" {
		id = NewRetryID()
	}
	r := Retry{ID: id, N: s.chain.Retries + 1, Max: d.max, Delay: d.Delay, Failure: f,
		Policy: d.policy, PolicyN: s.used[d.policy] + 1, Action: d.action}
	if r.Action != ActionNone {
		// A request that cannot be changed is no retry: nothing is counted.
		if err := s.adapter.Adapt(ctx, r); err != nil {
			if ctx.Err() != nil {
				return Retry{}, err
			}
			return Retry{}, s.giveUp(f, err.Error(), err)
		}
	}
	s.chain.ID, s.chain.Retries = id, r.N
	s.used[d.policy] = r.PolicyN
	return r, nil
}

// giveUp ends the sequence on f, why in words, cause the error.
func (s *sequence) giveUp(f *Failure, why string, cause error) *GiveUpError {
	return &GiveUpError{Failure: f, Attempts: s.attempts, Elapsed: time.Since(s.e.Start), Retries: retries(s.chain, s.used), Why: why, Err: cause}
}

// pastDeadline ends the sequence with a TIMEOUT: waiting delay to retry
// after f (err) would pass the request deadline. The reason shown is still
// the provider's, f's.
func (s *sequence) pastDeadline(f *Failure, delay time.Duration, err error) *GiveUpError {
	limit := s.e.Config.RequestDeadline
	g := s.giveUp(&Failure{Code: Timeout, Message: fmt.Sprintf(
		"waiting %s to retry would pass the request deadline (%s) after: %s", delay, limit, f.Summary()),
		RequestID: f.RequestID}, fmt.Sprintf("retrying in %s would pass the request deadline (%s)", delay, limit), err)
	g.reasonOf = f
	return g
}

// wait records the retry r, waits its delay and records that it starts:
// a retry is durable before it is waited, and a cancelled wait is told.
func (s *sequence) wait(ctx context.Context, r Retry) error {
	if err := s.obs.Scheduled(ctx, r); err != nil {
		return fmt.Errorf("record retry %d: %w", r.N, err)
	}
	if err := sleep(ctx, r.Delay); err != nil {
		s.obs.Cancelled(r)
		return err
	}
	if err := s.obs.Started(ctx, r); err != nil {
		return fmt.Errorf("record start of retry %d: %w", r.N, err)
	}
	return nil
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
	if d, ok := e.byRule(f, used, canAdapt); ok {
		return d
	}
	if d, ok := e.byChange(f, used, overloads, canAdapt); ok {
		return d
	}
	c := e.Config
	d := c.Policy.Decide(f, used[PolicyTransient]+1)
	return decision{Decision: d, policy: PolicyTransient, max: c.Policy.MaxRetries}
}

// byRule is the decision of the first of the user's rules that matches f
// and whose action, if any, the observer can carry out; ok is false when
// none does.
func (e *Executor) byRule(f *Failure, used map[string]int, canAdapt bool) (d decision, ok bool) {
	for i, rule := range e.Config.Rules {
		match, err := compileMatch(rule.Match)
		if err != nil || !match(f) {
			continue
		}
		if rule.Action != ActionNone && !canAdapt {
			continue
		}
		return e.ruleDecision(i, rule, f, used), true
	}
	return decision{}, false
}

// ruleDecision is what rule i, which matched f, decides: a retry after its
// delay or the provider's Retry-After, whichever is longer, while its
// budget lasts.
func (e *Executor) ruleDecision(i int, rule Rule, f *Failure, used map[string]int) decision {
	name := fmt.Sprintf("rule:%d", i+1)
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
		if limit := e.Config.Policy.MaxRetryAfter; ra > limit {
			return decision{Decision: Decision{Why: tooLong(f, limit)}}
		}
		delay = max(delay, ra)
	}
	return decision{Decision: Decision{Retry: true, Delay: delay}, policy: name, max: rule.MaxRetries, action: rule.Action}
}

// byChange is the decision of the policies that change the request: strip
// the images a model refuses, compact an overflow, fall back from an
// overloaded model. ok is false when none applies to f.
func (e *Executor) byChange(f *Failure, used map[string]int, overloads int, canAdapt bool) (d decision, ok bool) {
	c := e.Config
	if !canAdapt {
		return decision{}, false
	}
	switch {
	case f.Code == InvalidRequest && imageCodes[strings.ToLower(f.ProviderCode)]:
		if used[PolicyImages] >= 1 {
			return decision{Decision: Decision{Why: "the model still rejects the request after its images were removed"}}, true
		}
		return decision{Decision: Decision{Retry: true}, policy: PolicyImages, max: 1, action: ActionStripImages}, true
	case f.Code == ContextOverflow && c.Overflow:
		if used[PolicyOverflow] >= 1 {
			return decision{Decision: Decision{Why: ErrOverflowAgain.Error()}, cause: ErrOverflowAgain}, true
		}
		return decision{Decision: Decision{Retry: true}, policy: PolicyOverflow, max: 1, action: ActionCompact}, true
	case f.Code == Overloaded && c.FallbackModel != "" && overloads >= max(c.FallbackAfter, 1) && used[PolicyFallback] < 1:
		return decision{Decision: Decision{Retry: true, Delay: c.Policy.InitialDelay}, policy: PolicyFallback, max: 1, action: ActionFallback}, true
	}
	return decision{}, false
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
