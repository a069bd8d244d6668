package recovery_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/recovery"
)

func TestDefaultPolicy_MatchesDocumentedDefaults(t *testing.T) {
	want := recovery.Policy{
		MaxRetries: 2, InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: 0.1,
		MaxRetryAfter: 10 * time.Second,
		Retryable:     []recovery.Code{recovery.RateLimit, recovery.Overloaded, recovery.Server, recovery.Timeout, recovery.Transport, recovery.EmptyResponse},
	}
	if diff := cmp.Diff(want, recovery.DefaultPolicy()); diff != "" {
		t.Errorf("DefaultPolicy() (-want +got):\n%s", diff)
	}
}

func TestPolicy_BackoffWithoutJitter(t *testing.T) {
	p := recovery.Policy{InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second}
	tests := []struct {
		n    int
		want time.Duration
	}{
		{1, 500 * time.Millisecond},
		{2, time.Second},
		{3, 2 * time.Second},
		{4, 4 * time.Second},
		{5, 8 * time.Second},
		{6, 10 * time.Second}, // 16s, capped
		{7, 10 * time.Second},
		{50, 10 * time.Second},   // 500ms·2^49 would overflow
		{1000, 10 * time.Second}, // so would this
		{math.MaxInt, 10 * time.Second},
	}
	for _, tt := range tests {
		if got := p.Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

func TestPolicy_BackoffEdgeConfigs(t *testing.T) {
	tests := []struct {
		name string
		p    recovery.Policy
		n    int
		want time.Duration
	}{
		{"initial above max", recovery.Policy{InitialDelay: time.Minute, MaxDelay: 10 * time.Second}, 1, 10 * time.Second},
		{"max not a power-of-two multiple", recovery.Policy{InitialDelay: 300 * time.Millisecond, MaxDelay: time.Second}, 3, time.Second},
		{"zero delays", recovery.Policy{}, 5, 0},
		{"zero initial", recovery.Policy{MaxDelay: time.Second, Jitter: 0.1}, 3, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Backoff(tt.n); got != tt.want {
			t.Errorf("%s: Backoff(%d) = %v, want %v", tt.name, tt.n, got, tt.want)
		}
	}
}

func TestPolicy_BackoffJitterBounds(t *testing.T) {
	base := recovery.Policy{InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: 0.1}
	tests := []struct {
		name string
		r    float64
		// want for n = 1..6 (unjittered 0.5s, 1s, 2s, 4s, 8s, 10s)
		want []time.Duration
	}{
		{"lowest factor", 0, []time.Duration{
			450 * time.Millisecond, 900 * time.Millisecond, 1800 * time.Millisecond,
			3600 * time.Millisecond, 7200 * time.Millisecond, 9 * time.Second}},
		{"middle", 0.5, []time.Duration{
			500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}},
		{"highest factor reaches 1.1d and is capped at MaxDelay", math.Nextafter(1, 0), []time.Duration{
			550 * time.Millisecond, 1100 * time.Millisecond, 2200 * time.Millisecond,
			4400 * time.Millisecond, 8800 * time.Millisecond, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			p.Rand = func() float64 { return tt.r }
			var got []time.Duration
			for n := 1; n <= len(tt.want); n++ {
				got = append(got, p.Backoff(n))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Backoff(1..%d) (-want +got):\n%s", len(tt.want), diff)
			}
		})
	}

	t.Run("every factor stays in [0.9d, 1.1d] and under MaxDelay", func(t *testing.T) {
		for _, r := range []float64{0, 0.001, 0.25, 0.5, 0.75, 0.999, math.Nextafter(1, 0)} {
			p := base
			p.Rand = func() float64 { return r }
			for n := 1; n <= 60; n++ {
				d := min(base.InitialDelay<<min(n-1, 10), base.MaxDelay) // unjittered
				got := p.Backoff(n)
				lo, hi := time.Duration(float64(d)*0.9), min(time.Duration(float64(d)*1.1), base.MaxDelay)
				if got < lo || got > hi {
					t.Errorf("rand %v: Backoff(%d) = %v, want within [%v, %v]", r, n, got, lo, hi)
				}
			}
		}
	})

	t.Run("the default source stays in bounds", func(t *testing.T) {
		for range 1000 {
			if got := base.Backoff(1); got < 450*time.Millisecond || got > 550*time.Millisecond {
				t.Fatalf("Backoff(1) = %v, want within [450ms, 550ms]", got)
			}
			if got := base.Backoff(10); got < 9*time.Second || got > 10*time.Second {
				t.Fatalf("Backoff(10) = %v, want within [9s, 10s]", got)
			}
		}
	})
}

func TestPolicy_Decide(t *testing.T) {
	p := recovery.Policy{
		MaxRetries: 2, InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second,
		MaxRetryAfter: 10 * time.Second, Retryable: recovery.DefaultRetryable,
	}
	tests := []struct {
		name string
		f    recovery.Failure
		n    int
		want recovery.Decision
	}{
		{"rate limit, first retry", recovery.Failure{Code: recovery.RateLimit}, 1, recovery.Decision{Retry: true, Delay: 500 * time.Millisecond}},
		{"server, second retry", recovery.Failure{Code: recovery.Server}, 2, recovery.Decision{Retry: true, Delay: time.Second}},
		{"overloaded", recovery.Failure{Code: recovery.Overloaded}, 1, recovery.Decision{Retry: true, Delay: 500 * time.Millisecond}},
		{"timeout", recovery.Failure{Code: recovery.Timeout}, 1, recovery.Decision{Retry: true, Delay: 500 * time.Millisecond}},
		{"transport", recovery.Failure{Code: recovery.Transport}, 1, recovery.Decision{Retry: true, Delay: 500 * time.Millisecond}},
		{"empty response", recovery.Failure{Code: recovery.EmptyResponse}, 1, recovery.Decision{Retry: true, Delay: 500 * time.Millisecond}},
		{"budget used up", recovery.Failure{Code: recovery.RateLimit}, 3, recovery.Decision{Why: "retries exhausted"}},
		{"far beyond the budget", recovery.Failure{Code: recovery.RateLimit}, 100, recovery.Decision{Why: "retries exhausted"}},
		{"auth", recovery.Failure{Code: recovery.Auth}, 1, recovery.Decision{Why: "not retryable"}},
		{"quota", recovery.Failure{Code: recovery.Quota}, 1, recovery.Decision{Why: "not retryable"}},
		{"invalid request", recovery.Failure{Code: recovery.InvalidRequest}, 1, recovery.Decision{Why: "not retryable"}},
		{"context overflow", recovery.Failure{Code: recovery.ContextOverflow}, 1, recovery.Decision{Why: "not retryable"}},
		{"protocol", recovery.Failure{Code: recovery.Protocol}, 1, recovery.Decision{Why: "not retryable"}},
		{"aborted", recovery.Failure{Code: recovery.Aborted}, 1, recovery.Decision{Why: "not retryable"}},
		{"unknown", recovery.Failure{Code: recovery.Unknown}, 1, recovery.Decision{Why: "not retryable"}},
		{"not retryable wins over an exhausted budget", recovery.Failure{Code: recovery.Auth}, 3, recovery.Decision{Why: "not retryable"}},
		{"Retry-After replaces the backoff", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](3000)}, 1,
			recovery.Decision{Retry: true, Delay: 3 * time.Second}},
		{"Retry-After shorter than the backoff", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](100)}, 2,
			recovery.Decision{Retry: true, Delay: 100 * time.Millisecond}},
		{"Retry-After 0", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](0)}, 1,
			recovery.Decision{Retry: true, Delay: 0}},
		{"Retry-After exactly at the cap", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](10000)}, 1,
			recovery.Decision{Retry: true, Delay: 10 * time.Second}},
		{"Retry-After beyond the cap", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](120000)}, 1,
			recovery.Decision{Why: "the provider asked to wait 2m0s, longer than max_retry_after (10s)"}},
		{"Retry-After just beyond the cap", recovery.Failure{Code: recovery.Overloaded, RetryAfterMs: ptr[int64](10001)}, 1,
			recovery.Decision{Why: "the provider asked to wait 10.001s, longer than max_retry_after (10s)"}},
		{"Retry-After does not extend the budget", recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](1000)}, 3,
			recovery.Decision{Why: "retries exhausted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, p.Decide(&tt.f, tt.n)); diff != "" {
				t.Errorf("Decide(%s, %d) (-want +got):\n%s", tt.f.Code, tt.n, diff)
			}
		})
	}

	t.Run("Retry-After is not jittered", func(t *testing.T) {
		jp := p
		jp.Jitter = 0.1
		jp.Rand = func() float64 { return 0 } // the lowest factor, 0.9
		got := jp.Decide(&recovery.Failure{Code: recovery.RateLimit, RetryAfterMs: ptr[int64](2000)}, 1)
		if diff := cmp.Diff(recovery.Decision{Retry: true, Delay: 2 * time.Second}, got); diff != "" {
			t.Errorf("Decide() (-want +got):\n%s", diff)
		}
		got = jp.Decide(&recovery.Failure{Code: recovery.RateLimit}, 1)
		if diff := cmp.Diff(recovery.Decision{Retry: true, Delay: 450 * time.Millisecond}, got); diff != "" {
			t.Errorf("Decide() without Retry-After (-want +got):\n%s", diff)
		}
	})

	t.Run("custom retryable codes", func(t *testing.T) {
		cp := p
		cp.Retryable = []recovery.Code{recovery.Server}
		if got := cp.Decide(&recovery.Failure{Code: recovery.RateLimit}, 1); got.Retry || got.Why != "not retryable" {
			t.Errorf("Decide(RATE_LIMIT) = %+v, want not retryable", got)
		}
	})

	t.Run("zero retries", func(t *testing.T) {
		zp := p
		zp.MaxRetries = 0
		if got := zp.Decide(&recovery.Failure{Code: recovery.Server}, 1); got.Retry || got.Why != "retries exhausted" {
			t.Errorf("Decide() = %+v, want retries exhausted", got)
		}
	})
}

// Full jitter: the delay is uniform in [0, backoff] (Jitter is not used),
// pinned with an injected Rand; every draw stays in bounds.
func TestPolicy_BackoffFullJitter(t *testing.T) {
	base := recovery.Policy{InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second, Jitter: 0.1, JitterMode: recovery.JitterFull}
	tests := []struct {
		name string
		r    float64
		want []time.Duration // n = 1..6 (unjittered 0.5s, 1s, 2s, 4s, 8s, 10s)
	}{
		{"lowest draw sends at once", 0, []time.Duration{0, 0, 0, 0, 0, 0}},
		{"a quarter", 0.25, []time.Duration{125 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 2500 * time.Millisecond}},
		{"middle", 0.5, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second}},
		{"a draw out of range is clamped", 7, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base
			p.Rand = func() float64 { return tt.r }
			var got []time.Duration
			for n := 1; n <= len(tt.want); n++ {
				got = append(got, p.Backoff(n))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Backoff(1..%d) (-want +got):\n%s", len(tt.want), diff)
			}
		})
	}
	t.Run("the default source stays in [0, backoff]", func(t *testing.T) {
		var below int
		for range 1000 {
			got := base.Backoff(3)
			if got < 0 || got > 2*time.Second {
				t.Fatalf("Backoff(3) = %v, want within [0, 2s]", got)
			}
			if got < time.Second {
				below++
			}
		}
		if below < 350 || below > 650 { // uniform: about half below the middle
			t.Errorf("%d of 1000 draws below the middle, want about half", below)
		}
	})
}
