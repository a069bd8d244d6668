package recovery

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// This file exports the header readers package ratelimit needs to learn a
// provider bucket's state from every response; it adds no reading rules of
// its own beyond pairing each limit with its remaining count.

// HeaderWait is the wait a response's headers ask for, and where: a
// Retry-After header (retry-after-ms, x-ms-retry-after-ms, Retry-After) on
// any status, else on a 429 the latest reset of its exhausted limits (as
// the recovery policy reads them).
func HeaderWait(status int, h http.Header, now time.Time) (d time.Duration, source string, ok bool) {
	if d, source, ok, _ := retryAfter(h, now); ok {
		return d, source, true
	}
	if status != http.StatusTooManyRequests {
		return 0, "", false
	}
	if hi, ok := longest(headerResets(h, "", nil, now)); ok {
		return hi.d, shownSource(hi.source), true
	}
	return 0, "", false
}

// Limit is one rate limit a response's headers describe: the reset header
// paired with its remaining count ("x-ratelimit-reset-requests" with
// "x-ratelimit-remaining-requests"), or an item of the IETF RateLimit header.
type Limit struct {
	Source    string        // the reset header's name in lower case, or "ratelimit"
	Remaining float64       // what is left in the window, when Known
	Known     bool          // a remaining count was sent
	Reset     time.Duration // until the window resets
	Requests  bool          // it counts requests (not tokens)
	Limit     float64       // the size of the limit ("x-ratelimit-limit-requests"), when > 0
}

// ResponseLimits reads every limit of h that says when it resets, whether
// exhausted or not, in the order of their names.
func ResponseLimits(h http.Header, now time.Time) []Limit {
	values := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if lower := strings.ToLower(k); len(h[k]) > 0 && values[lower] == "" {
			values[lower] = h[k][0]
		}
	}
	var out []Limit
	for _, lower := range slices.Sorted(maps.Keys(values)) {
		if lower == SourceRateLimit {
			out = append(out, structuredLimits(values[lower], now)...)
			continue
		}
		parts := strings.Split(lower, "-")
		at := slices.IndexFunc(parts, func(p string) bool { return p == "reset" || p == "resets" })
		if at < 0 || !isRateLimitName(parts) {
			continue
		}
		millis := slices.ContainsFunc(parts, func(p string) bool { return p == "ms" || p == "millis" || p == "milliseconds" })
		d, ok := parseWait(values[lower], millis, now)
		if !ok {
			continue
		}
		rem := slices.Clone(parts)
		rem[at] = "remaining"
		left, known := parseCount(values[strings.Join(rem, "-")])
		rem[at] = "limit"
		size, _ := parseCount(values[strings.Join(rem, "-")])
		out = append(out, Limit{Source: shownSource(lower), Remaining: left, Known: known && left >= 0, Reset: d, Limit: max(size, 0),
			Requests: slices.ContainsFunc(parts, func(p string) bool { return p == "requests" || p == "request" || p == "req" })})
	}
	return out
}

// structuredLimits reads the IETF RateLimit header's limits, as
// structuredReset does; a limit without a unit is taken to count requests
// (the draft's default quota unit).
func structuredLimits(v string, now time.Time) []Limit {
	items := strings.Split(v, ",")
	if strings.Contains(v, "reset=") {
		items = []string{strings.ReplaceAll(v, ",", ";")}
	}
	var out []Limit
	for _, item := range items {
		var reset, remaining, limit string
		requests := true
		for _, p := range strings.Split(item, ";") {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			val = strings.Trim(strings.TrimSpace(val), `"`)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "t", "reset":
				reset = val
			case "r", "remaining":
				remaining = val
			case "limit":
				limit = val
			case "qu":
				requests = val == "requests"
			}
		}
		d, ok := parseWait(reset, false, now)
		if !ok {
			continue
		}
		left, known := parseCount(remaining)
		size, _ := parseCount(limit)
		out = append(out, Limit{Source: SourceRateLimit, Remaining: left, Known: known && left >= 0, Reset: d, Requests: requests, Limit: max(size, 0)})
	}
	return out
}
