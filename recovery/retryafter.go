package recovery

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxWait is the longest wait ParseRetryAfter reports. A provider may ask
// for any number of seconds (RFC 9110 puts no bound on delay-seconds); a
// request beyond what a Duration holds is reported as this, which is as
// good as forever and far beyond any max_retry_after.
const maxWait = time.Duration(math.MaxInt64)

// ParseRetryAfter reads how long the provider asked us to wait:
// `retry-after-ms` (milliseconds, as OpenAI and Anthropic send) first, since
// it is the more precise, then `Retry-After` as delta-seconds or an
// HTTP-date relative to now. ok is false when neither header is present; err
// is set when one is present but unusable, so the caller can log it and fall
// back to its own backoff instead of sleeping on garbage.
//
// Only syntax makes a value unusable: a wait of any length that is written
// correctly is reported as asked (up to maxWait), and the policy decides
// whether it is too long to wait (max_retry_after). A provider that asks for
// a day and a half is telling us to give up, not sending garbage. The
// duration is never negative: a date in the past means now.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool, err error) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if d, ok := parseMillis(v); ok {
			return d, true, nil
		}
		err = fmt.Errorf("invalid retry-after-ms header %q", v)
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false, err
	}
	if d, ok := parseSeconds(v); ok {
		return d, true, nil
	}
	if at, perr := http.ParseTime(v); perr == nil {
		return max(at.Sub(now), 0), true, nil
	}
	return 0, false, fmt.Errorf("invalid Retry-After header %q: neither seconds nor an HTTP date", v)
}

// parseSeconds reads delta-seconds: 1*DIGIT, nothing else (no sign, no
// fraction), saturating at maxWait.
func parseSeconds(v string) (time.Duration, bool) {
	for i := range len(v) {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	secs, err := strconv.ParseUint(v, 10, 64)
	if err != nil || secs > uint64(maxWait/time.Second) { // only ErrRange: the digits are checked
		return maxWait, true
	}
	return time.Duration(secs) * time.Second, true
}

// parseMillis reads retry-after-ms: a non-negative decimal number of
// milliseconds, possibly with a fraction, saturating at maxWait. NaN, the
// infinities, hex floats and signs are not what a provider sends.
func parseMillis(v string) (time.Duration, bool) {
	for i := range len(v) {
		if c := v[i]; (c < '0' || c > '9') && c != '.' && c != 'e' && c != 'E' && c != '+' && c != '-' {
			return 0, false
		}
	}
	if v[0] < '0' || v[0] > '9' {
		return 0, false // a sign or a bare fraction
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil && !isRange(err) {
		return 0, false
	}
	if ms < 0 || math.IsNaN(ms) {
		return 0, false
	}
	ns := ms * float64(time.Millisecond)
	if ns >= float64(maxWait) { // also +Inf, which ParseFloat gives with ErrRange
		return maxWait, true
	}
	return time.Duration(ns), true
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
