package recovery

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Policy is the transient-failure retry policy: which failures are retried,
// how many times, and how long to wait before each retry.
type Policy struct {
	MaxRetries   int
	InitialDelay time.Duration
	MaxDelay     time.Duration
	Jitter       float64 // the delay is multiplied by a factor in [1-Jitter, 1+Jitter]
	// JitterMode is JitterProportional ("" too) or JitterFull: the delay
	// is uniform in [0, backoff], and Jitter is not used.
	JitterMode    string
	MaxRetryAfter time.Duration
	Retryable     []Code
	// Rand returns a number in [0,1); nil means math/rand/v2. Tests inject a
	// fixed source to pin jittered delays.
	Rand func() float64
}

// Jitter modes (Policy.JitterMode, recovery.jitter_mode).
const (
	// JitterProportional: the backoff times a factor in [1-jitter, 1+jitter],
	// close to the backoff, so retries keep their rhythm.
	JitterProportional = "proportional"
	// JitterFull: uniform in [0, backoff] ("full jitter"): many clients
	// that failed together, every chat of a shared limit, spread out over
	// the whole window rather than retrying in a bunch.
	JitterFull = "full"
)

// JitterModes are the values recovery.jitter_mode takes.
var JitterModes = []string{JitterProportional, JitterFull}

// DefaultRetryable are the codes retried unless configured otherwise: the
// failures that may pass by waiting.
var DefaultRetryable = []Code{RateLimit, Overloaded, Server, Timeout, Transport, EmptyResponse}

// DefaultPolicy is the transient policy of the default configuration:
// config.Default takes its values from here.
func DefaultPolicy() Policy {
	return Policy{MaxRetries: 2, InitialDelay: 500 * time.Millisecond, MaxDelay: 10 * time.Second,
		Jitter: 0.1, MaxRetryAfter: 10 * time.Second, Retryable: DefaultRetryable}
}

// Backoff is the local delay before retry n (1-based):
// min(initial·2^(n-1), max) times the jitter factor, capped at max; with
// full jitter, uniform in [0, min(initial·2^(n-1), max)].
func (p Policy) Backoff(n int) time.Duration {
	d := p.InitialDelay
	for i := 1; i < n && d < p.MaxDelay; i++ { // stop doubling at the cap: no overflow
		d *= 2
	}
	d = min(d, p.MaxDelay)
	r := rand.Float64
	if p.Rand != nil {
		r = p.Rand
	}
	if p.JitterMode == JitterFull {
		return time.Duration(float64(d) * min(max(r(), 0), 1))
	}
	if p.Jitter > 0 {
		factor := 1 - p.Jitter + 2*p.Jitter*r()
		d = time.Duration(float64(d) * factor)
	}
	return min(d, p.MaxDelay)
}

// Decision is what the policy says about one failure.
type Decision struct {
	Retry bool
	Delay time.Duration
	// Why explains a refusal to a person, e.g. "the provider asked to wait
	// 2m0s, longer than max_retry_after (10s)".
	Why string
}

// Decide says whether failure f, the n-th of the current recovery sequence
// (1-based), is retried, and after how long.
func (p Policy) Decide(f *Failure, n int) Decision {
	if !slices.Contains(p.Retryable, f.Code) || f.Permanent() {
		return Decision{Why: "not retryable"}
	}
	if n > p.MaxRetries {
		return Decision{Why: "retries exhausted"}
	}
	if f.RetryAfterMs != nil {
		ra := time.Duration(*f.RetryAfterMs) * time.Millisecond
		if ra > p.MaxRetryAfter {
			return Decision{Why: tooLong(f, p.MaxRetryAfter)}
		}
		return Decision{Retry: true, Delay: ra} // the provider knows best: not jittered
	}
	return Decision{Retry: true, Delay: p.Backoff(n)}
}

// tooLong explains a wait the provider asked for that is longer than
// max_retry_after, naming the wait and where the provider said it.
func tooLong(f *Failure, limit time.Duration) string {
	ra := time.Duration(*f.RetryAfterMs) * time.Millisecond
	switch {
	case f.RetryAfterSource == "" || f.RetryAfterSource == SourceRetryAfter || f.RetryAfterSource == SourceRetryAfterMs:
		return fmt.Sprintf("the provider asked to wait %s, longer than max_retry_after (%s)", ra, limit)
	case asked(f.RetryAfterSource):
		return fmt.Sprintf("the provider asked to wait %s (%s), longer than max_retry_after (%s)", ra, f.RetryAfterSource, limit)
	}
	return fmt.Sprintf("the provider says the limit resets in %s (%s), longer than max_retry_after (%s)", ra, f.RetryAfterSource, limit)
}
