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

// retryAfterHeaders are the headers that say how long to wait before the
// next request, most precise first: milliseconds (OpenAI, Anthropic, Azure
// OpenAI; Azure's other services prefix it x-ms-), then Retry-After.
var retryAfterHeaders = []struct {
	name   string // as recorded in retryAfterSource
	millis bool
}{
	{SourceRetryAfterMs, true},
	{"x-ms-retry-after-ms", true},
	{SourceRetryAfter, false},
}

// ParseRetryAfter reads how long the provider asked us to wait:
// `retry-after-ms` or `x-ms-retry-after-ms` (milliseconds) first, since
// they are the more precise, then `Retry-After` as delta-seconds (a
// fraction allowed: providers send "2.73") or an HTTP-date relative to now.
// ok is false when none is present; err is set when one is present but
// unusable, so the caller can log it and fall back to its own backoff
// instead of sleeping on garbage.
//
// Only syntax makes a value unusable: a wait of any length that is written
// correctly is reported as asked (up to maxWait), and the policy decides
// whether it is too long to wait (max_retry_after). A provider that asks for
// a day and a half is telling us to give up, not sending garbage. The
// duration is never negative: a date in the past means now.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool, err error) {
	d, _, ok, err = retryAfter(h, now)
	return d, ok, err
}

// retryAfter is ParseRetryAfter that also says which header it read.
func retryAfter(h http.Header, now time.Time) (d time.Duration, source string, ok bool, err error) {
	for _, ra := range retryAfterHeaders {
		v := strings.TrimSpace(h.Get(ra.name))
		if v == "" {
			continue
		}
		if ra.millis {
			if d, ok := parseMillis(v); ok {
				return d, ra.name, true, nil
			}
			err = fmt.Errorf("invalid %s header %q", ra.name, v)
			continue
		}
		if d, ok := parseSeconds(v); ok {
			return d, ra.name, true, nil
		}
		if at, perr := http.ParseTime(v); perr == nil {
			return max(at.Sub(now), 0), ra.name, true, nil
		}
		err = fmt.Errorf("invalid Retry-After header %q: neither seconds nor an HTTP date", v)
	}
	return 0, "", false, err
}

// parseSeconds reads delta-seconds: 1*DIGIT, optionally followed by a
// fraction ("2.73": RFC 9110 has none, providers send them), nothing else
// (no sign, no exponent, no space), saturating at maxWait. The integer part
// is read exactly, so a long wait is not rounded.
func parseSeconds(v string) (time.Duration, bool) {
	whole, frac, dotted := strings.Cut(v, ".")
	if !allDigits(whole) || (dotted && !allDigits(frac)) {
		return 0, false
	}
	secs, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || secs > uint64(maxWait/time.Second) { // only ErrRange: the digits are checked
		return maxWait, true
	}
	d := time.Duration(secs) * time.Second
	var ns time.Duration // the fraction, to the nanosecond; later digits are dropped
	for i, scale := 0, time.Second/10; i < len(frac) && scale > 0; i, scale = i+1, scale/10 {
		ns += time.Duration(frac[i]-'0') * scale
	}
	if d > maxWait-ns {
		return maxWait, true
	}
	return d + ns, true
}

// allDigits: at least one ASCII digit and nothing else.
func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
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
	return fromFloat(ms * float64(time.Millisecond)), true
}

// fromFloat is a non-negative number of nanoseconds as a Duration,
// saturating at maxWait (+Inf included).
func fromFloat(ns float64) time.Duration {
	switch {
	case ns >= float64(maxWait):
		return maxWait
	case !(ns > 0): // also NaN
		return 0
	}
	return time.Duration(ns)
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
