package recovery

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reset headers. Providers name them every way ("x-ratelimit-reset-tokens",
// "x-ratelimit-reset-tokens-minute" (Cerebras), "anthropic-ratelimit-tokens-reset",
// "x-ratelimit-reset", "ratelimit-reset", "x-rate-limit-reset"): a header is one
// when its name has a "ratelimit" (or "rate-limit") part and a "reset" part.
// Its limit's count is the header named alike with "remaining" for "reset";
// a limit with some left is not the one that was hit.

// headerResets reads the reset headers of h whose limit is exhausted (its
// remaining count 0, or not sent), and the structured RateLimit header.
// Names are matched in lower case, whatever their casing in h. A header is
// named by prefix and its name in lower case, or as names has it (a
// forwarded header: lower-case name → the key as the body wrote it).
func headerResets(h http.Header, prefix string, names map[string]string, now time.Time) []hint {
	values := firstValues(h)
	var out []hint
	for _, lower := range slices.Sorted(maps.Keys(values)) {
		if d, ok := exhaustedReset(lower, values, now); ok {
			out = append(out, hint{d: d, source: headerSource(prefix, names, lower)})
		}
	}
	return out
}

// firstValues is the first value of each header of h, by its name in lower
// case; of names alike but for case, the first in sorted order.
func firstValues(h http.Header) map[string]string {
	values := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if lower := strings.ToLower(k); len(h[k]) > 0 && values[lower] == "" {
			values[lower] = h[k][0]
		}
	}
	return values
}

// headerSource names the header lower as headerResets says.
func headerSource(prefix string, names map[string]string, lower string) string {
	if n, ok := names[lower]; ok {
		return prefix + n
	}
	return prefix + lower
}

// exhaustedReset is the wait of the header lower of values when it is the
// RateLimit header or a reset header whose limit has none left.
func exhaustedReset(lower string, values map[string]string, now time.Time) (time.Duration, bool) {
	if lower == SourceRateLimit {
		return structuredReset(values[lower], now)
	}
	parts := strings.Split(lower, "-")
	at := slices.IndexFunc(parts, func(p string) bool { return p == "reset" || p == "resets" })
	if at < 0 || !isRateLimitName(parts) {
		return 0, false
	}
	rem := slices.Clone(parts)
	rem[at] = "remaining"
	if left, ok := parseCount(values[strings.Join(rem, "-")]); ok && left > 0 {
		return 0, false
	}
	millis := slices.ContainsFunc(parts, func(p string) bool { return p == "ms" || p == "millis" || p == "milliseconds" })
	return parseWait(values[lower], millis, now)
}

func isRateLimitName(parts []string) bool {
	for i, p := range parts {
		if p == "ratelimit" || strings.HasSuffix(p, "ratelimit") || (p == "rate" && i+1 < len(parts) && parts[i+1] == "limit") {
			return true
		}
	}
	return false
}

// parseCount reads a remaining count; ok is false when there is none.
func parseCount(v string) (float64, bool) {
	n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return n, err == nil && !math.IsNaN(n)
}

// structuredReset reads the IETF draft's RateLimit header: the older
// `limit=100, remaining=0, reset=30` and the newer list of limits
// `"minute";r=0;t=30, "day";r=50;t=3600`, whose t (reset) is delta seconds.
// Of an exhausted limit (remaining 0 or not given) the longest reset counts.
// RateLimit-Policy's window (w=) is the length of a window, not when the
// current one ends, so it is not a wait.
func structuredReset(v string, now time.Time) (time.Duration, bool) {
	items := strings.Split(v, ",")
	if strings.Contains(v, "reset=") { // the older draft: one limit, its fields split by commas
		items = []string{strings.ReplaceAll(v, ",", ";")}
	}
	var best time.Duration
	found := false
	for _, item := range items {
		var reset, remaining string
		for _, p := range strings.Split(item, ";") {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "t", "reset":
				reset = strings.Trim(strings.TrimSpace(val), `"`)
			case "r", "remaining":
				remaining = strings.Trim(strings.TrimSpace(val), `"`)
			}
		}
		if left, ok := parseCount(remaining); reset == "" || (ok && left > 0) {
			continue
		}
		if d, ok := parseWait(reset, false, now); ok && (!found || d > best) {
			best, found = d, true
		}
	}
	return best, found
}

// parseWait reads one value that says when to come back. The forms:
//   - a Go-style duration: "1m30s", "6m0s", "2ms", "7.66s", "1h2m3.5s";
//   - a time: RFC 3339 ("2026-12-06T10:00:00Z", a space for the T, "UTC"
//     for the zone) or an HTTP date;
//   - a plain non-negative number (a fraction allowed), told apart by its
//     magnitude against now's Unix time N (in seconds; about 1.8e9 in 2027):
//     from 31·N on it is epoch milliseconds, from N/2 on epoch seconds (as a
//     wait, N/2 seconds would be some 28 years, which no provider means), and
//     below that a wait in seconds, or in milliseconds when millis (the
//     header or field says ms; then epoch milliseconds from 500·N on). A
//     wait in milliseconds under a name that does not say so cannot be told
//     from one in seconds; it is read as seconds.
//
// Signs, exponents, NaN, the infinities and inner spaces (outside a date)
// are not waits. A long wait saturates at maxWait; a time past is 0.
func parseWait(v string, millis bool, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" || len(v) > 64 {
		return 0, false
	}
	if n, ok := decimal(v); ok {
		return fromNumber(n, millis, now), true
	}
	if d, err := time.ParseDuration(v); err == nil && v[0] >= '0' && v[0] <= '9' {
		return d, true // a leading digit: no sign, so never negative
	}
	if at, ok := parseTime(v); ok {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// decimal reads DIGITS[.DIGITS] as a number; +Inf for one too long to hold.
func decimal(v string) (float64, bool) {
	whole, frac, dotted := strings.Cut(v, ".")
	if !allDigits(whole) || (dotted && !allDigits(frac)) {
		return 0, false
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && !isRange(err) {
		return 0, false
	}
	return n, true
}

// fromNumber applies parseWait's magnitude rule.
func fromNumber(n float64, millis bool, now time.Time) time.Duration {
	unix := float64(max(now.Unix(), 1e8)) // a clock before 1973 is wrong; keep the rule sane
	switch {
	case millis && n >= 500*unix, !millis && n >= 31*unix:
		return untilEpoch(n, 1e3, now)
	case !millis && n >= unix/2:
		return untilEpoch(n, 1, now)
	case millis:
		return fromSeconds(n / 1e3)
	}
	return fromSeconds(n)
}

// untilEpoch is the wait until n seconds after the Unix epoch (scale 1),
// or n milliseconds (scale 1e3), to the microsecond: a float holds an
// epoch with a fraction to about that.
func untilEpoch(n, scale float64, now time.Time) time.Duration {
	if n/scale >= 1e15 { // beyond any date a Time is sure to hold: forever
		return maxWait
	}
	whole, frac := math.Modf(n)
	at := time.Unix(int64(whole), 0)
	if scale != 1 {
		at = time.UnixMilli(int64(whole))
	}
	at = at.Add(fromSeconds(frac / scale))
	return max(at.Sub(now), 0) // Sub saturates
}

// fromSeconds is a non-negative number of seconds as a Duration, rounded
// to the microsecond (a decimal fraction is not exact in a float: 4.068 s
// must not become 4.067999 s) and saturating at maxWait.
func fromSeconds(x float64) time.Duration {
	return fromFloat(math.Round(x*1e6) * 1e3)
}

// timeLayouts are the ways providers write a time to come back at; the zone
// must be given (a time without one could be any of 24 hours).
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02T15:04:05.999999999-0700", "2006-01-02T15:04-0700"}

func parseTime(v string) (time.Time, bool) {
	if at, err := http.ParseTime(v); err == nil {
		return at, true
	}
	s := v
	if len(s) > 10 && s[10] == ' ' {
		s = s[:10] + "T" + s[11:]
	}
	for _, z := range []string{" UTC", " GMT", "UTC", "GMT"} {
		if strings.HasSuffix(s, z) {
			s = strings.TrimSuffix(s, z) + "Z"
			break
		}
	}
	s = strings.Replace(s, " ", "", 1) // "10:00:00 +02:00"
	for _, layout := range timeLayouts {
		if at, err := time.Parse(layout, s); err == nil {
			return at, true
		}
	}
	return time.Time{}, false
}
