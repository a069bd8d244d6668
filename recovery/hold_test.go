package recovery_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/recovery"
)

// retries records every Retry the executor hands its observer, whole.
type retries struct {
	mu    sync.Mutex
	start time.Time
	got   []heldCall
}

type heldCall struct {
	Kind    string
	At      time.Duration
	N       int
	Policy  string
	PolicyN int
	Max     int
	Delay   time.Duration
	Failure *recovery.Failure
}

func (r *retries) add(kind string, x recovery.Retry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, heldCall{kind, time.Since(r.start), x.N, x.Policy, x.PolicyN, x.Max, x.Delay, x.Failure})
}
func (r *retries) Scheduled(_ context.Context, x recovery.Retry) error {
	r.add("Scheduled", x)
	return nil
}
func (r *retries) Started(_ context.Context, x recovery.Retry) error { r.add("Started", x); return nil }
func (r *retries) Cancelled(x recovery.Retry)                        { r.add("Cancelled", x) }

// kinds is each call's kind, at, policy and delay: the shape of a run.
func (r *retries) shape() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.got {
		out = append(out, c.Kind+" "+c.At.String()+" "+c.Policy+" "+c.Delay.String())
	}
	return out
}

func heldFacts(ms int64, source string, held recovery.Held, msg string) *recovery.Failure {
	return &recovery.Failure{Code: recovery.RateLimit, Message: msg, RetryAfterMs: &ms, RetryAfterSource: source, Held: &held}
}

// A hold the gate asks for is waited before the attempt, recorded first
// and shown as a retry's wait of policy shared, counted in no budget; one
// too long to wait ends recovery at once with facts /retry wait can wait
// for; a short pacing is waited without a word.
func TestExecutor_HoldsBeforeAnAttempt(t *testing.T) {
	const s = time.Second
	other := func(d time.Duration) testkit.GateHold {
		return testkit.GateHold{For: d, Reason: recovery.HoldCooldown, By: recovery.HoldByOtherChat, Source: "x-ratelimit-reset-requests"}
	}
	pacing := func(d time.Duration) testkit.GateHold {
		return testkit.GateHold{For: d, Reason: recovery.HoldPacing, By: recovery.HoldByOtherProcess, Source: "x-ratelimit-remaining-requests"}
	}
	tests := []struct {
		name    string
		config  recovery.Config
		holds   []testkit.GateHold
		errs    []error
		wantAt  []time.Duration
		want    []string
		wantOut *outcome
	}{
		{name: "no hold: sent at once", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{{}}, wantAt: []time.Duration{0}},
		{name: "a hold already over: sent at once", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{other(-s)}, wantAt: []time.Duration{0}},
		{name: "another chat's cooldown is waited, recorded first", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{other(4 * s)}, wantAt: []time.Duration{4 * s},
			want: []string{"Scheduled 0s shared 4s", "Started 4s shared 4s"}},
		{name: "a short cooldown is shown too", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{other(300 * time.Millisecond)}, wantAt: []time.Duration{300 * time.Millisecond},
			want: []string{"Scheduled 0s shared 300ms", "Started 300ms shared 300ms"}},
		{name: "a short pacing is waited silently", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{pacing(999 * time.Millisecond)}, wantAt: []time.Duration{999 * time.Millisecond}},
		{name: "a pacing of a second is shown", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{pacing(s)}, wantAt: []time.Duration{s},
			want: []string{"Scheduled 0s shared 1s", "Started 1s shared 1s"}},
		{name: "a hold longer than max_retry_after gives up at once", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{other(40 * s)},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the limit, reached by another chat, resets in 40s (x-ratelimit-reset-requests), longer than max_retry_after (10s)",
				Message: "Held by the provider's shared rate limit; the limit, reached by another chat, resets in 40s (x-ratelimit-reset-requests), longer than max_retry_after (10s)"}},
		{name: "a pacing longer than max_retry_after gives up at once", config: recovery.Config{Policy: testPolicy},
			holds: []testkit.GateHold{pacing(11 * s)},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the limit is nearly used up (as another Rebound process learnt) and the next request may go in 11s (x-ratelimit-remaining-requests), longer than max_retry_after (10s)",
				Message: "Held by the provider's shared rate limit; the limit is nearly used up (as another Rebound process learnt) and the next request may go in 11s (x-ratelimit-remaining-requests), longer than max_retry_after (10s)"}},
		{name: "a hold past the request deadline gives up at once", config: recovery.Config{Policy: testPolicy, RequestDeadline: 5 * s},
			holds: []testkit.GateHold{other(5 * s)},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the limit, reached by another chat, resets in 5s (x-ratelimit-reset-requests), which would pass the request deadline (5s)",
				Message: "Held by the provider's shared rate limit; the limit, reached by another chat, resets in 5s (x-ratelimit-reset-requests), which would pass the request deadline (5s)"}},
		{name: "even a silent pacing past the deadline gives up", config: recovery.Config{Policy: testPolicy, RequestDeadline: 500 * time.Millisecond},
			holds: []testkit.GateHold{pacing(600 * time.Millisecond)},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the limit is nearly used up (as another Rebound process learnt) and the next request may go in 600ms (x-ratelimit-remaining-requests), which would pass the request deadline (500ms)",
				Message: "Held by the provider's shared rate limit; the limit is nearly used up (as another Rebound process learnt) and the next request may go in 600ms (x-ratelimit-remaining-requests), which would pass the request deadline (500ms)"}},
		{name: "holds count in no retry budget", config: recovery.Config{Policy: testPolicy},
			holds:  []testkit.GateHold{other(2 * s), {}, other(3 * s)},
			errs:   []error{rateLimited(), rateLimited(), rateLimited()},
			wantAt: []time.Duration{2 * s, 2500 * time.Millisecond, 6500 * time.Millisecond},
			want: []string{"Scheduled 0s shared 2s", "Started 2s shared 2s",
				"Scheduled 2s transient 500ms", "Started 2.5s transient 500ms",
				"Scheduled 2.5s transient 1s", "Started 3.5s transient 1s",
				"Scheduled 3.5s shared 3s", "Started 6.5s shared 3s"},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "retries exhausted", Attempts: 3, Retries: 2, Elapsed: 6500 * time.Millisecond,
				Message: "Rate limited by the provider (429); gave up after 2 retries in 6.5s: slow down"}},
		{name: "a hold after a retry gives up counting only the retries", config: recovery.Config{Policy: testPolicy},
			holds:  []testkit.GateHold{other(2 * s), {}, other(30 * s)},
			errs:   []error{rateLimited(), rateLimited()},
			wantAt: []time.Duration{2 * s, 2500 * time.Millisecond},
			want: []string{"Scheduled 0s shared 2s", "Started 2s shared 2s",
				"Scheduled 2s transient 500ms", "Started 2.5s transient 500ms",
				"Scheduled 2.5s transient 1s", "Started 3.5s transient 1s"},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the limit, reached by another chat, resets in 30s (x-ratelimit-reset-requests), longer than max_retry_after (10s)",
				Attempts: 2, Retries: 2, Elapsed: 3500 * time.Millisecond,
				Message: "Held by the provider's shared rate limit; the limit, reached by another chat, resets in 30s (x-ratelimit-reset-requests), longer than max_retry_after (10s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gate := &testkit.Gate{Holds: tt.holds}
				obs := &retries{start: time.Now()}
				att := newScripted(tt.errs...)
				e := recovery.Executor{Config: tt.config, Start: time.Now(), Origin: "sess_a", Gate: func() recovery.Gate { return gate }}
				err := e.Do(t.Context(), recovery.Chain{}, obs, att.attempt)
				if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
					t.Errorf("Do() outcome (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantAt, att.at); diff != "" {
					t.Errorf("attempt times (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.want, obs.shape()); diff != "" {
					t.Errorf("observer calls (-want +got):\n%s", diff)
				}
				for _, origin := range gate.Asked() {
					if origin != "sess_a" {
						t.Errorf("the gate was asked for %q, want the executor's origin", origin)
					}
				}
				if g, ok := recovery.AsGiveUp(err); ok && g.Failure.Held != nil {
					// /retry wait waits for what the give-up's facts name.
					if g.Failure.RetryAfterMs == nil || time.Duration(*g.Failure.RetryAfterMs)*time.Millisecond != tt.holds[len(tt.holds)-1].For {
						t.Errorf("give-up facts name no wait of the hold: %+v", g.Failure)
					}
				}
			})
		})
	}
}

// What a recorded hold carries: its numbering in the chain (after the
// chain's earlier retries), its own count, no budget, and facts that say
// who reached the limit.
func TestExecutor_HoldRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := &testkit.Gate{Holds: []testkit.GateHold{{For: 2 * time.Second, By: recovery.HoldBySelf, Source: "retry-after"}}}
		obs := &retries{start: time.Now()}
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now(), Gate: func() recovery.Gate { return gate }}
		chain := recovery.Chain{ID: "retry_carried", Retries: 1, Used: map[string]int{recovery.PolicyTransient: 1}}
		if err := e.Do(t.Context(), chain, obs, newScripted().attempt); err != nil {
			t.Fatal(err)
		}
		want := heldCall{Kind: "Scheduled", N: 2, Policy: recovery.PolicyShared, PolicyN: 1, Delay: 2 * time.Second,
			Failure: heldFacts(2000, "retry-after", recovery.Held{Reason: recovery.HoldCooldown, By: recovery.HoldBySelf},
				"this chat reached the provider's rate limit (retry-after)")}
		if diff := cmp.Diff(want, obs.got[0], cmp.AllowUnexported(recovery.Failure{})); diff != "" {
			t.Errorf("the hold's record (-want +got):\n%s", diff)
		}
	})
}

// A cancel during a hold ends it at once: the observer is told, no request
// goes out, and the cancel's cause is returned, not a give-up.
func TestExecutor_HoldCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCancelled := errors.New("session/cancel")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		gate := &testkit.Gate{Holds: []testkit.GateHold{{For: 8 * time.Second, Reason: recovery.HoldCooldown, By: recovery.HoldByOtherChat}}}
		obs := &retries{start: time.Now()}
		att := newScripted()
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now(), Gate: func() recovery.Gate { return gate }}
		done := make(chan error, 1)
		go func() { done <- e.Do(ctx, recovery.Chain{}, obs, att.attempt) }()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		cancel(errCancelled)
		err := <-done
		if !errors.Is(err, errCancelled) {
			t.Errorf("Do() = %v, want the cancel's cause", err)
		}
		if _, ok := recovery.AsGiveUp(err); ok {
			t.Errorf("Do() = %v, want no give-up for a cancel", err)
		}
		if got := time.Since(obs.start); got != 3*time.Second {
			t.Errorf("Do() returned after %v, want 3s: at once on cancel", got)
		}
		if diff := cmp.Diff([]string{"Scheduled 0s shared 8s", "Cancelled 3s shared 8s"}, obs.shape()); diff != "" {
			t.Errorf("observer calls (-want +got):\n%s", diff)
		}
		if len(att.at) != 0 {
			t.Errorf("attempts at %v, want none", att.at)
		}
	})
}

// Each attempt runs in one of the gate's in-flight slots, given back when
// it returns (its stream has ended), with the gate and the origin in its
// ctx for the HTTP layer; a slot is waited for, as long as the request
// deadline allows.
func TestExecutor_InFlightSlot(t *testing.T) {
	t.Run("held around the attempt, in its ctx", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gate := &testkit.Gate{Slots: 1}
			var inside []int
			e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now(), Origin: "sess_a", Gate: func() recovery.Gate { return gate }}
			n := 0
			err := e.Do(t.Context(), recovery.Chain{}, &retries{start: time.Now()}, func(ctx context.Context) error {
				now, _ := gate.InFlight()
				inside = append(inside, now)
				g, origin, ok := recovery.GateFrom(ctx)
				if !ok || g != recovery.Gate(gate) || origin != "sess_a" {
					t.Errorf("GateFrom(attempt ctx) = %v, %q, %v; want the gate and the origin", g, origin, ok)
				}
				if n++; n == 1 {
					return unavailable()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if now, most := gate.InFlight(); now != 0 || most != 1 || !cmp.Equal(inside, []int{1, 1}) {
				t.Errorf("in flight after: %d, at most %d, during the attempts %v; want 0, 1, [1 1]", now, most, inside)
			}
		})
	})
	t.Run("waited for until one is free", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gate := &testkit.Gate{Slots: 1}
			release, _ := gate.Acquire(t.Context())
			time.AfterFunc(3*time.Second, release)
			att := newScripted()
			e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now(), Gate: func() recovery.Gate { return gate }}
			if err := e.Do(t.Context(), recovery.Chain{}, &retries{start: time.Now()}, att.attempt); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]time.Duration{3 * time.Second}, att.at); diff != "" {
				t.Errorf("attempt times (-want +got):\n%s", diff)
			}
		})
	})
	t.Run("not past the request deadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			gate := &testkit.Gate{Slots: 1}
			release, _ := gate.Acquire(t.Context())
			defer release()
			att := newScripted()
			e := recovery.Executor{Config: recovery.Config{Policy: testPolicy, RequestDeadline: 4 * time.Second}, Start: time.Now(), Gate: func() recovery.Gate { return gate }}
			err := e.Do(t.Context(), recovery.Chain{}, &retries{start: time.Now()}, att.attempt)
			g, ok := recovery.AsGiveUp(err)
			if !ok || g.Failure.Code != recovery.Timeout || time.Since(att.start) != 4*time.Second || len(att.at) != 0 {
				t.Fatalf("Do() = %v after %v with attempts at %v; want a TIMEOUT give-up at the 4s deadline, no attempt", err, time.Since(att.start), att.at)
			}
			if want := "every request slot of the provider (max_in_flight) stayed taken until the request deadline"; g.Failure.Message != want {
				t.Errorf("message %q, want %q", g.Failure.Message, want)
			}
		})
	})
}

// The gate is asked again before every attempt: a fallback switches the
// model, and with it the bucket; a nil gate is none.
func TestExecutor_GateAskedPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		first := &testkit.Gate{}
		var gates []recovery.Gate
		asked := 0
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now(), Gate: func() recovery.Gate {
			asked++
			if asked == 1 {
				return first
			}
			return nil
		}}
		err := e.Do(t.Context(), recovery.Chain{}, &retries{start: time.Now()}, func(ctx context.Context) error {
			g, _, ok := recovery.GateFrom(ctx)
			gates = append(gates, g)
			if !ok && len(gates) == 1 {
				t.Error("the first attempt's ctx has no gate")
			}
			if len(gates) == 1 {
				return unavailable()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if asked != 2 || gates[0] != recovery.Gate(first) || gates[1] != nil {
			t.Errorf("asked %d times, attempts saw %v; want 2, [first nil]", asked, gates)
		}
	})
}

// FuzzExecutorHolds: whatever the gate asks (holds of any length, reason
// and author, before any attempt) and however the attempts go, a hold is
// no request and no retry: the requests stay within 1 + the budget, the
// give-up counts only the retries, every recorded wait is bounded by
// max_retry_after and ends before the request deadline, only a pacing
// under SilentPacing goes unrecorded, the chain's numbering goes up by one
// across holds and retries, and a give-up on a hold names its wait.
func FuzzExecutorHolds(f *testing.F) {
	f.Add([]byte{0x10, 0x80, 0x01, 0x02, 0x00, 0x05}, uint8(2), uint16(30))
	f.Add([]byte{0xff, 0x01, 0x40, 0x07, 0x90, 0x00, 0x33}, uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, script []byte, budget uint8, deadlineS uint16) {
		if len(script) > 64 {
			script = script[:64]
		}
		synctest.Test(t, func(t *testing.T) {
			reasons := []string{recovery.HoldCooldown, recovery.HoldPacing, ""}
			bys := []string{recovery.HoldBySelf, recovery.HoldByOtherChat, recovery.HoldByOtherProcess, "?"}
			var holds []testkit.GateHold
			var errs []error
			for i, b := range script {
				if i%2 == 0 { // a hold: up to 25.5 s in 100 ms steps, some none
					holds = append(holds, testkit.GateHold{For: time.Duration(b>>1) * 200 * time.Millisecond,
						Reason: reasons[int(b)%len(reasons)], By: bys[int(b)%len(bys)], Source: "x-ratelimit-reset-requests"})
					continue
				}
				if b%4 == 0 {
					errs = append(errs, nil)
					break
				}
				errs = append(errs, rateLimited())
			}
			pol := testPolicy
			pol.MaxRetries = int(budget % 4)
			cfg := recovery.Config{Policy: pol, RequestDeadline: time.Duration(deadlineS%120) * time.Second}
			gate := &testkit.Gate{Holds: slices.Clone(holds)}
			obs := &retries{start: time.Now()}
			att := newScripted(errs...)
			e := recovery.Executor{Config: cfg, Start: time.Now(), Gate: func() recovery.Gate { return gate }}
			err := e.Do(t.Context(), recovery.Chain{}, obs, att.attempt)

			if len(att.at) > 1+pol.MaxRetries {
				t.Fatalf("%d requests, budget %d: a hold was counted as no wait or a retry as none", len(att.at), pol.MaxRetries)
			}
			deadline := cfg.RequestDeadline
			own, shared := 0, 0
			for i, c := range obs.got {
				if c.Kind != "Scheduled" {
					continue
				}
				if c.N != own+shared+1 {
					t.Fatalf("call %d numbered %d after %d retries and %d holds", i, c.N, own, shared)
				}
				if c.Policy != recovery.PolicyShared {
					own++
					continue
				}
				shared++
				if c.Delay > pol.MaxRetryAfter || deadline > 0 && c.At+c.Delay >= deadline {
					t.Fatalf("a hold of %v at %v waited past max_retry_after %v or the deadline %v", c.Delay, c.At, pol.MaxRetryAfter, deadline)
				}
				if f := c.Failure; f == nil || f.Held == nil || f.Code != recovery.RateLimit || f.RetryAfterMs == nil || *f.RetryAfterMs != c.Delay.Milliseconds() {
					t.Fatalf("a hold's facts %+v do not name its wait %v", f, c.Delay)
				}
				if f := c.Failure.Held; c.Delay < recovery.SilentPacing && (f.Reason == recovery.HoldPacing || f.By == recovery.HoldBySelf) {
					t.Fatalf("a short hold (%s, by %s) of %v was recorded", f.Reason, f.By, c.Delay)
				}
			}
			asked := len(gate.Asked())
			recorded := 0
			for _, h := range holds[:min(asked, len(holds))] {
				if h.For > 0 && !(h.For < recovery.SilentPacing && (h.Reason == recovery.HoldPacing || h.By == recovery.HoldBySelf)) {
					recorded++
				}
			}
			g, gaveUp := recovery.AsGiveUp(err)
			if gaveUp && g.Failure.Held != nil {
				recorded-- // the last hold was too long: given up, not waited
				last := holds[asked-1]
				if g.Failure.RetryAfterMs == nil || time.Duration(*g.Failure.RetryAfterMs)*time.Millisecond != last.For {
					t.Fatalf("the give-up names %v, the hold was %v", g.Failure.RetryAfterMs, last.For)
				}
			}
			if recorded != shared {
				t.Fatalf("%d holds to show, %d recorded", recorded, shared)
			}
			if gaveUp && g.Retries != own {
				t.Fatalf("the give-up counts %d retries, %d were made", g.Retries, own)
			}
		})
	})
}
