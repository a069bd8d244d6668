package recovery_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
)

// testPolicy is the default policy without jitter, so delays are exact.
var testPolicy = recovery.Policy{
	MaxRetries: 2, InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second,
	MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable,
}

func rateLimited() error {
	return &llm.Error{Status: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "slow down"}
}

func rateLimitedAfter(retryAfter string) error {
	return &llm.Error{Status: 429, Code: "rate_limit_exceeded", Message: "slow down", Header: http.Header{"Retry-After": {retryAfter}}}
}

func unavailable() error {
	return &llm.Error{Status: 503, Type: "server_error", Message: "not ready"}
}

// outcome is what a test checks of a *GiveUpError.
type outcome struct {
	Code     recovery.Code
	Why      string
	Attempts int
	Retries  int
	Elapsed  time.Duration
	Message  string
}

func outcomeOf(t *testing.T, err error) *outcome {
	t.Helper()
	if err == nil {
		return nil
	}
	g, ok := recovery.AsGiveUp(err)
	if !ok {
		t.Fatalf("Do() = %T %v, want a *GiveUpError", err, err)
	}
	if g.Error() != g.Message() {
		t.Errorf("Error() = %q, want Message() %q", g.Error(), g.Message())
	}
	return &outcome{Code: g.Failure.Code, Why: g.Why, Attempts: g.Attempts, Retries: g.Retries, Elapsed: g.Elapsed, Message: g.Message()}
}

func TestExecutor_Do(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name   string
		config recovery.Config
		chain  recovery.Chain
		errs   []error // what the attempts return, in order; then success
		wantAt []time.Duration
		want   []call
		// wantOut is nil for success
		wantOut *outcome
	}{
		{
			name:   "success on the first try",
			config: recovery.Config{Policy: testPolicy},
			wantAt: []time.Duration{0},
		},
		{
			name:   "429 then success",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimited()},
			wantAt: []time.Duration{0, 500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
			},
		},
		{
			name:   "retries exhausted: 1 + max_retries attempts",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimited(), rateLimited(), rateLimited(), rateLimited()},
			wantAt: []time.Duration{0, 500 * ms, 1500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Scheduled", At: 500 * ms, ID: "<new>", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
				{Kind: "Started", At: 1500 * ms, ID: "<new>", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
			},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "retries exhausted", Attempts: 3, Retries: 2, Elapsed: 1500 * ms,
				Message: "Rate limited by the provider (429); gave up after 2 retries in 1.5s: slow down"},
		},
		{
			name:   "failures of different kinds share one budget",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{unavailable(), rateLimitedAfter("2"), recovery.ErrEmptyResponse},
			wantAt: []time.Duration{0, 500 * ms, 2500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.Server},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.Server},
				{Kind: "Scheduled", At: 500 * ms, ID: "<new>", N: 2, Max: 2, Delay: 2 * time.Second, Code: recovery.RateLimit},
				{Kind: "Started", At: 2500 * ms, ID: "<new>", N: 2, Max: 2, Delay: 2 * time.Second, Code: recovery.RateLimit},
			},
			wantOut: &outcome{Code: recovery.EmptyResponse, Why: "retries exhausted", Attempts: 3, Retries: 2, Elapsed: 2500 * ms,
				Message: "The provider sent an empty reply; gave up after 2 retries in 2.5s"},
		},
		{
			name:   "a carried chain continues its numbering and budget",
			config: recovery.Config{Policy: testPolicy},
			chain:  recovery.Chain{ID: "retry_x", Retries: 1},
			errs:   []error{rateLimited(), rateLimited()},
			wantAt: []time.Duration{0, time.Second},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "retry_x", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
				{Kind: "Started", At: time.Second, ID: "retry_x", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
			},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "retries exhausted", Attempts: 2, Retries: 2, Elapsed: time.Second,
				Message: "Rate limited by the provider (429); gave up after 2 retries in 1.0s: slow down"},
		},
		{
			name:   "a carried chain with no budget left",
			config: recovery.Config{Policy: testPolicy},
			chain:  recovery.Chain{ID: "retry_x", Retries: 2},
			errs:   []error{rateLimited()},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "retries exhausted", Attempts: 1, Retries: 2,
				Message: "Rate limited by the provider (429); gave up after 2 retries in 0.0s: slow down"},
		},
		{
			name:   "not retryable: 401",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{&llm.Error{Status: 401, Code: "invalid_api_key", Message: "Incorrect API key provided."}},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.Auth, Why: "not retryable", Attempts: 1,
				Message: "The provider rejected the API key (401): Incorrect API key provided."},
		},
		{
			name:   "not retryable after a retry",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{unavailable(), &llm.Error{Status: 400, Code: "context_length_exceeded", Message: "too long"}},
			wantAt: []time.Duration{0, 500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.Server},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.Server},
			},
			wantOut: &outcome{Code: recovery.ContextOverflow, Why: "not retryable", Attempts: 2, Retries: 1, Elapsed: 500 * ms,
				Message: "The conversation is too long for the model (400): too long"},
		},
		{
			name:   "Retry-After within the cap replaces the backoff",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimitedAfter("3")},
			wantAt: []time.Duration{0, 3 * time.Second},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 3 * time.Second, Code: recovery.RateLimit},
				{Kind: "Started", At: 3 * time.Second, ID: "<new>", N: 1, Max: 2, Delay: 3 * time.Second, Code: recovery.RateLimit},
			},
		},
		{
			name:   "Retry-After beyond the cap gives up at once",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimitedAfter("120")},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the provider asked to wait 2m0s, longer than max_retry_after (10s)", Attempts: 1,
				Message: "Rate limited by the provider (429); the provider asked to wait 2m0s, longer than max_retry_after (10s): slow down"},
		},
		{
			// Issue #10: a wait of more than a day used to be read as an
			// invalid header and retried after the local backoff.
			name:   "Retry-After of more than a day gives up at once",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimitedAfter("90000")},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the provider asked to wait 25h0m0s, longer than max_retry_after (10s)", Attempts: 1,
				Message: "Rate limited by the provider (429); the provider asked to wait 25h0m0s, longer than max_retry_after (10s): slow down"},
		},
		{
			name:   "retry-after-ms of more than a day gives up at once",
			config: recovery.Config{Policy: testPolicy},
			errs: []error{&llm.Error{Status: 429, Code: "rate_limit_exceeded", Message: "slow down",
				Header: http.Header{"Retry-After-Ms": {"90000000"}}}},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the provider asked to wait 25h0m0s, longer than max_retry_after (10s)", Attempts: 1,
				Message: "Rate limited by the provider (429); the provider asked to wait 25h0m0s, longer than max_retry_after (10s): slow down"},
		},
		{
			name:   "Retry-After beyond any duration gives up at once",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimitedAfter("99999999999999999999")},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.RateLimit, Why: "the provider asked to wait 2562047h47m16.854s, longer than max_retry_after (10s)", Attempts: 1,
				Message: "Rate limited by the provider (429); the provider asked to wait 2562047h47m16.854s, longer than max_retry_after (10s): slow down"},
		},
		{
			name:   "an invalid Retry-After falls back to the local backoff",
			config: recovery.Config{Policy: testPolicy},
			errs:   []error{rateLimitedAfter("-90000")},
			wantAt: []time.Duration{0, 500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
			},
		},
		{
			name: "jittered delays come from the policy's Rand",
			config: recovery.Config{Policy: func() recovery.Policy {
				p := testPolicy
				p.Jitter = 0.1
				p.Rand = func() float64 { return 0 }
				return p
			}()},
			errs:   []error{unavailable(), unavailable()},
			wantAt: []time.Duration{0, 450 * ms, 1350 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 450 * ms, Code: recovery.Server},
				{Kind: "Started", At: 450 * ms, ID: "<new>", N: 1, Max: 2, Delay: 450 * ms, Code: recovery.Server},
				{Kind: "Scheduled", At: 450 * ms, ID: "<new>", N: 2, Max: 2, Delay: 900 * ms, Code: recovery.Server},
				{Kind: "Started", At: 1350 * ms, ID: "<new>", N: 2, Max: 2, Delay: 900 * ms, Code: recovery.Server},
			},
		},
		{
			name:   "a wait past the request deadline fails at once",
			config: recovery.Config{Policy: testPolicy, RequestDeadline: 2 * time.Second},
			errs:   []error{rateLimitedAfter("3")},
			wantAt: []time.Duration{0},
			wantOut: &outcome{Code: recovery.Timeout, Why: "retrying in 3s would pass the request deadline (2s)", Attempts: 1,
				Message: "The provider did not answer in time; retrying in 3s would pass the request deadline (2s): slow down"},
		},
		{
			name:   "the request deadline stops a later retry",
			config: recovery.Config{Policy: testPolicy, RequestDeadline: time.Second},
			errs:   []error{rateLimited(), rateLimited()},
			wantAt: []time.Duration{0, 500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
			},
			wantOut: &outcome{Code: recovery.Timeout, Why: "retrying in 1s would pass the request deadline (1s)", Attempts: 2, Retries: 1, Elapsed: 500 * ms,
				Message: "The provider did not answer in time; retrying in 1s would pass the request deadline (1s): slow down"},
		},
		{
			// Waiting until exactly the deadline would leave the retry no
			// time at all: it could only fail.
			name:   "a wait ending exactly at the request deadline fails at once",
			config: recovery.Config{Policy: testPolicy, RequestDeadline: 1500 * ms},
			errs:   []error{rateLimited(), rateLimited()},
			wantAt: []time.Duration{0, 500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
			},
			wantOut: &outcome{Code: recovery.Timeout, Why: "retrying in 1s would pass the request deadline (1.5s)", Attempts: 2, Retries: 1, Elapsed: 500 * ms,
				Message: "The provider did not answer in time; retrying in 1s would pass the request deadline (1.5s): slow down"},
		},
		{
			name:   "a wait ending before the request deadline goes ahead",
			config: recovery.Config{Policy: testPolicy, RequestDeadline: 1501 * ms},
			errs:   []error{rateLimited(), rateLimited()},
			wantAt: []time.Duration{0, 500 * ms, 1500 * ms},
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * ms, ID: "<new>", N: 1, Max: 2, Delay: 500 * ms, Code: recovery.RateLimit},
				{Kind: "Scheduled", At: 500 * ms, ID: "<new>", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
				{Kind: "Started", At: 1500 * ms, ID: "<new>", N: 2, Max: 2, Delay: time.Second, Code: recovery.RateLimit},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := newObserver(t)
				att := newScripted(tt.errs...)
				e := recovery.Executor{Config: tt.config, Start: time.Now()}
				err := e.Do(t.Context(), tt.chain, obs, att.attempt)

				if diff := cmp.Diff(tt.wantOut, outcomeOf(t, err)); diff != "" {
					t.Errorf("Do() outcome (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantAt, att.at); diff != "" {
					t.Errorf("attempt times (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.want, obs.Calls()); diff != "" {
					t.Errorf("observer calls (-want +got):\n%s", diff)
				}
				if g, ok := recovery.AsGiveUp(err); ok {
					// The last attempt's error stays reachable.
					if last := att.last; !errors.Is(err, last) || g.Err != last {
						t.Errorf("GiveUpError.Err = %v, want the last attempt's error %v", g.Err, last)
					}
				}
			})
		})
	}
}

// The elapsed time in the message counts from the turn's start, which may
// be before this logical request began.
func TestGiveUpError_Message(t *testing.T) {
	f := &recovery.Failure{Code: recovery.Server, Status: 503, Message: "not ready"}
	tests := []struct {
		name string
		err  recovery.GiveUpError
		want string
	}{
		{"exhausted", recovery.GiveUpError{Failure: f, Attempts: 3, Retries: 2, Elapsed: 2140 * time.Millisecond, Why: "retries exhausted"},
			"The provider had a server error (503); gave up after 2 retries in 2.1s: not ready"},
		{"exhausted after one attempt", recovery.GiveUpError{Failure: f, Attempts: 1, Why: "retries exhausted"},
			"The provider had a server error (503); gave up without a retry, after 0.0s: not ready"},
		{"not retryable", recovery.GiveUpError{Failure: f, Attempts: 1, Why: "not retryable"},
			"The provider had a server error (503): not ready"},
		{"another reason", recovery.GiveUpError{Failure: f, Attempts: 1, Why: "the provider asked to wait 1m0s, longer than max_retry_after (10s)"},
			"The provider had a server error (503); the provider asked to wait 1m0s, longer than max_retry_after (10s): not ready"},
		{"a long reason is cut", recovery.GiveUpError{Failure: &recovery.Failure{Code: recovery.Server, Status: 500, Message: strings.Repeat("a b\n", 200)}, Attempts: 3, Retries: 2, Why: "retries exhausted"},
			"The provider had a server error (500); gave up after 2 retries in 0.0s: " + strings.Repeat("a b ", 75) + "…"},
		{"no reason without one", recovery.GiveUpError{Failure: &recovery.Failure{Code: recovery.Transport, Message: "EOF"}, Attempts: 3, Retries: 2, Why: "retries exhausted"},
			"The connection to the provider failed; gave up after 2 retries in 0.0s"},
	}
	for _, tt := range tests {
		if got := tt.err.Message(); got != tt.want {
			t.Errorf("%s: Message() = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestExecutor_DoCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCancelled := errors.New("session/cancel")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		obs := newObserver(t)
		att := newScripted(rateLimitedAfter("5"))
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now()}

		done := make(chan error, 1)
		go func() { done <- e.Do(ctx, recovery.Chain{}, obs, att.attempt) }()

		time.Sleep(2 * time.Second) // 3s of the 5s wait are left
		synctest.Wait()             // Do is parked in its wait
		cancel(errCancelled)
		err := <-done

		if !errors.Is(err, errCancelled) {
			t.Errorf("Do() = %v, want the cancel cause %v", err, errCancelled)
		}
		if _, ok := recovery.AsGiveUp(err); ok {
			t.Errorf("Do() = %v, want no GiveUpError for a cancellation", err)
		}
		if got := time.Since(obs.start); got != 2*time.Second {
			t.Errorf("Do() returned after %v, want 2s (at once on cancel)", got)
		}
		want := []call{
			{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 5 * time.Second, Code: recovery.RateLimit},
			{Kind: "Cancelled", At: 2 * time.Second, ID: "<new>", N: 1, Max: 2, Delay: 5 * time.Second, Code: recovery.RateLimit},
		}
		if diff := cmp.Diff(want, obs.Calls()); diff != "" {
			t.Errorf("observer calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]time.Duration{0}, att.at); diff != "" {
			t.Errorf("attempt times (-want +got):\n%s", diff)
		}
	})
}

// A cancellation that reaches a running attempt returns the attempt's error
// as is: it is the caller's doing, not a failure to classify or retry.
func TestExecutor_DoCancelDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errCancelled := errors.New("session/cancel")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		obs := newObserver(t)
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy, AttemptTimeout: time.Minute}, Start: time.Now()}

		done := make(chan error, 1)
		go func() {
			done <- e.Do(ctx, recovery.Chain{}, obs, func(ctx context.Context) error {
				<-ctx.Done()
				return fmt.Errorf("read stream: %w", context.Cause(ctx))
			})
		}()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		cancel(errCancelled)
		err := <-done

		if !errors.Is(err, errCancelled) {
			t.Errorf("Do() = %v, want the attempt's error wrapping %v", err, errCancelled)
		}
		if _, ok := recovery.AsGiveUp(err); ok {
			t.Errorf("Do() = %v, want no GiveUpError for a cancellation", err)
		}
		if got := time.Since(obs.start); got != 3*time.Second {
			t.Errorf("Do() returned after %v, want 3s", got)
		}
		if calls := obs.Calls(); len(calls) != 0 {
			t.Errorf("observer calls = %v, want none", calls)
		}
	})
}

func TestExecutor_DoObserverErrors(t *testing.T) {
	errDisk := errors.New("disk full")
	tests := []struct {
		name         string
		scheduledErr error
		startedErr   error
		wantErr      string
		wantElapsed  time.Duration
		want         []call
	}{
		{
			name: "Scheduled fails: no wait, no retry", scheduledErr: errDisk,
			wantErr: "record retry 1: disk full", wantElapsed: 0,
			want: []call{{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * time.Millisecond, Code: recovery.RateLimit}},
		},
		{
			name: "Started fails: no retry", startedErr: errDisk,
			wantErr: "record start of retry 1: disk full", wantElapsed: 500 * time.Millisecond,
			want: []call{
				{Kind: "Scheduled", At: 0, ID: "<new>", N: 1, Max: 2, Delay: 500 * time.Millisecond, Code: recovery.RateLimit},
				{Kind: "Started", At: 500 * time.Millisecond, ID: "<new>", N: 1, Max: 2, Delay: 500 * time.Millisecond, Code: recovery.RateLimit},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := newObserver(t)
				obs.scheduledErr, obs.startedErr = tt.scheduledErr, tt.startedErr
				att := newScripted(rateLimited(), rateLimited())
				e := recovery.Executor{Config: recovery.Config{Policy: testPolicy}, Start: time.Now()}
				err := e.Do(t.Context(), recovery.Chain{}, obs, att.attempt)

				if err == nil || err.Error() != tt.wantErr || !errors.Is(err, errDisk) {
					t.Errorf("Do() = %v, want %q wrapping %v", err, tt.wantErr, errDisk)
				}
				if got := time.Since(obs.start); got != tt.wantElapsed {
					t.Errorf("Do() returned after %v, want %v", got, tt.wantElapsed)
				}
				if diff := cmp.Diff([]time.Duration{0}, att.at); diff != "" {
					t.Errorf("attempt times (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.want, obs.Calls()); diff != "" {
					t.Errorf("observer calls (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// An attempt runs under min(attempt timeout, what is left of the turn).
func TestExecutor_DoAttemptTimeout(t *testing.T) {
	type window struct{ Start, End time.Duration }
	tests := []struct {
		name       string
		config     recovery.Config
		want       []window
		wantOut    outcome
		wantLastIs error
	}{
		{
			name:   "attempt timeout",
			config: recovery.Config{Policy: func() recovery.Policy { p := testPolicy; p.MaxRetries = 0; return p }(), AttemptTimeout: 30 * time.Second},
			want:   []window{{0, 30 * time.Second}},
			wantOut: outcome{Code: recovery.Timeout, Why: "retries exhausted", Attempts: 1, Elapsed: 30 * time.Second,
				Message: "The request took longer than recovery.attempt_timeout; gave up without a retry, after 30.0s"},
		},
		{
			name:   "the request deadline does not cut an attempt; it stops the wait after it",
			config: recovery.Config{Policy: testPolicy, AttemptTimeout: 30 * time.Second, RequestDeadline: 20 * time.Second},
			want:   []window{{0, 30 * time.Second}},
			wantOut: outcome{Code: recovery.Timeout, Why: "retrying in 500ms would pass the request deadline (20s)", Attempts: 1, Elapsed: 30 * time.Second,
				Message: "The provider did not answer in time; retrying in 500ms would pass the request deadline (20s)"},
		},
		{
			name:   "a retry gets its whole attempt timeout; the deadline stops the next wait",
			config: recovery.Config{Policy: testPolicy, AttemptTimeout: 30 * time.Second, RequestDeadline: 45 * time.Second},
			want:   []window{{0, 30 * time.Second}, {30500 * time.Millisecond, 60500 * time.Millisecond}},
			wantOut: outcome{Code: recovery.Timeout, Why: "retrying in 1s would pass the request deadline (45s)", Attempts: 2, Retries: 1, Elapsed: 60500 * time.Millisecond,
				Message: "The provider did not answer in time; retrying in 1s would pass the request deadline (45s)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				var got []window
				e := recovery.Executor{Config: tt.config, Start: start}
				err := e.Do(t.Context(), recovery.Chain{}, newObserver(t), func(ctx context.Context) error {
					w := window{Start: time.Since(start)}
					<-ctx.Done() // a request that never answers
					w.End = time.Since(start)
					got = append(got, w)
					return fmt.Errorf("chat completion request: %w: %w", context.Cause(ctx), ctx.Err())
				})
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("attempt windows (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(&tt.wantOut, outcomeOf(t, err)); diff != "" {
					t.Errorf("Do() outcome (-want +got):\n%s", diff)
				}
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Do() = %v, want the last attempt's error wrapping context.DeadlineExceeded", err)
				}
			})
		})
	}
}

// Through the real adapter and the mock: the number of HTTP requests is
// exactly the number of attempts, and never more than 1 + max_retries.
func TestExecutor_DoRequestsThroughProvider(t *testing.T) {
	tests := []struct {
		name       string
		script     mockprovider.Script
		noWatchdog bool
		wantAt     []time.Duration // request arrival times
		wantText   string
		wantGiveUp string
	}{
		{
			name: "429 with Retry-After, 500, then a reply",
			script: mockprovider.Script{Steps: []mockprovider.Step{
				{Status: 429, Headers: map[string]string{"Retry-After": "1"}},
				{Status: 500},
				{Text: "Hello there", Chunks: 2},
			}},
			wantAt:   []time.Duration{0, time.Second, 2 * time.Second},
			wantText: "Hello there",
		},
		{
			name:       "the provider keeps failing",
			script:     mockprovider.Script{Fallback: &mockprovider.Step{Status: 503}},
			wantAt:     []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond},
			wantGiveUp: "The provider had a server error (503); gave up after 2 retries in 1.5s: The server is overloaded or not ready yet (mock provider).",
		},
		{
			name:       "streams keep dropping",
			script:     mockprovider.Script{Fallback: &mockprovider.Step{Text: "abc", Chunks: 3, DropAfter: ptr(2)}},
			wantAt:     []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond},
			wantGiveUp: "The connection to the provider failed; gave up after 2 retries in 1.5s",
		},
		{
			name: "first-token watchdog, then a reply",
			script: mockprovider.Script{Steps: []mockprovider.Step{
				{Text: "late", StallAfter: ptr(0)},
				{Text: "on time"},
			}},
			wantAt:   []time.Duration{0, 10500 * time.Millisecond},
			wantText: "on time",
		},
		{
			name:       "the attempt timeout aborts stalled requests",
			script:     mockprovider.Script{Fallback: &mockprovider.Step{Text: "late", StallAfter: ptr(0)}},
			noWatchdog: true,
			wantAt:     []time.Duration{0, 60500 * time.Millisecond, 121500 * time.Millisecond},
			wantGiveUp: "The request took longer than recovery.attempt_timeout; gave up after 2 retries in 181.5s",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				p, m := newProvider(t, &tt.script)
				cfg := recovery.Config{Policy: testPolicy, AttemptTimeout: time.Minute, RequestDeadline: 10 * time.Minute,
					Watchdog: recovery.Timeouts{FirstToken: 10 * time.Second, Idle: 5 * time.Second}}
				if tt.noWatchdog {
					cfg.Watchdog = recovery.Timeouts{}
				}
				e := recovery.Executor{Config: cfg, Start: start}
				var text string
				err := e.Do(t.Context(), recovery.Chain{}, newObserver(t), func(ctx context.Context) error {
					s, err := recovery.Watch(ctx, p, hello, cfg.Watchdog)
					if err != nil {
						return err
					}
					defer s.Close()
					got, err := drain(t, s)
					if !errors.Is(err, io.EOF) {
						return err
					}
					text = got
					return nil
				})

				gotGiveUp := ""
				if err != nil {
					gotGiveUp = err.Error()
				}
				if gotGiveUp != tt.wantGiveUp || text != tt.wantText {
					t.Errorf("Do() = %q with text %q, want %q with text %q", gotGiveUp, text, tt.wantGiveUp, tt.wantText)
				}
				var at []time.Duration
				for _, r := range m.Requests() {
					at = append(at, r.Time.Sub(start))
				}
				if diff := cmp.Diff(tt.wantAt, at); diff != "" {
					t.Errorf("request times (-want +got):\n%s", diff)
				}
				if n := m.Count(); n > 1+cfg.Policy.MaxRetries {
					t.Errorf("requests = %d, want at most 1 + max_retries = %d", n, 1+cfg.Policy.MaxRetries)
				}
			})
		})
	}
}

// TestExecutor_DeadlineSparesAHealthyStream: an attempt that is still
// producing when the request deadline passes is not cut; it finishes.
func TestExecutor_DeadlineSparesAHealthyStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := recovery.Executor{Config: recovery.Config{Policy: testPolicy, RequestDeadline: 3 * time.Second}, Start: start}
		err := e.Do(t.Context(), recovery.Chain{}, newObserver(t), func(ctx context.Context) error {
			for range 5 { // a chunk a second for 5 s
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(time.Second):
				}
			}
			return nil
		})
		if err != nil || time.Since(start) != 5*time.Second {
			t.Errorf("Do() = %v after %v, want success after 5s", err, time.Since(start))
		}
	})
}

// fallbackRecorder is an Observer and Adapter that keeps the policy of each
// scheduled retry.
type fallbackRecorder struct{ policies []string }

func (r *fallbackRecorder) Scheduled(_ context.Context, rt recovery.Retry) error {
	r.policies = append(r.policies, rt.Policy)
	return nil
}
func (r *fallbackRecorder) Started(context.Context, recovery.Retry) error { return nil }
func (r *fallbackRecorder) Cancelled(recovery.Retry)                      {}
func (r *fallbackRecorder) Adapt(context.Context, recovery.Retry) error   { return nil }

// TestExecutor_OverloadRunIsBrokenByOtherFailures: the fallback counts
// consecutive OVERLOADED failures only; a failure of another kind between
// them starts the count again.
func TestExecutor_OverloadRunIsBrokenByOtherFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newProvider(t, &mockprovider.Script{Steps: []mockprovider.Step{
			{Status: 529}, {Status: 429}, {Status: 529}, {Status: 529}, {Text: "ok"},
		}})
		policy := testPolicy
		policy.MaxRetries = 5
		rec := &fallbackRecorder{}
		e := recovery.Executor{Config: recovery.Config{Policy: policy, FallbackModel: "small", FallbackAfter: 2}, Start: time.Now()}
		err := e.Do(t.Context(), recovery.Chain{}, rec, func(ctx context.Context) error {
			s, err := p.Stream(ctx, hello)
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = drain(t, s)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Fatalf("Do() = %v", err)
		}
		// 529 (1), 429 breaks the run, 529 (1), 529 (2): only then the fallback.
		want := []string{recovery.PolicyTransient, recovery.PolicyTransient, recovery.PolicyTransient, recovery.PolicyFallback}
		if diff := cmp.Diff(want, rec.policies); diff != "" {
			t.Errorf("policies of the retries (-want +got):\n%s", diff)
		}
	})
}
