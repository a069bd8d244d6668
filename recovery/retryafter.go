package recovery

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ParseRetryAfter reads how long the provider asked us to wait:
// `retry-after-ms` (milliseconds, as OpenAI and Anthropic send) first, since
// it is the more precise, then `Retry-After` as delta-seconds or an
// HTTP-date relative to now. ok is false when neither header is present; err
// is set when one is present but unusable, so the caller can log it and fall
// back to its own backoff instead of sleeping on garbage.
func ParseRetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool, err error) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		ms, perr := strconv.ParseFloat(v, 64)
		if perr == nil && ms >= 0 && ms < float64(24*time.Hour/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond)), true, nil
		}
		err = fmt.Errorf("invalid retry-after-ms header %q", v)
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false, err
	}
	if secs, perr := strconv.ParseInt(v, 10, 64); perr == nil {
		if secs < 0 || secs > int64(24*time.Hour/time.Second) {
			return 0, false, fmt.Errorf("invalid Retry-After header %q: out of range", v)
		}
		return time.Duration(secs) * time.Second, true, nil
	}
	if at, perr := http.ParseTime(v); perr == nil {
		return max(at.Sub(now), 0), true, nil
	}
	return 0, false, fmt.Errorf("invalid Retry-After header %q: neither seconds nor an HTTP date", v)
}
