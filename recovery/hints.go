package recovery

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// Where a provider's wait came from, as recorded in retryAfterSource. The
// other sources are named as found: a header in lower case
// ("x-ratelimit-reset-tokens-minute"), or the path of a field in the error
// body, keys joined by dots, arrays skipped ("error.metadata.retry_after_seconds",
// "error.metadata.headers.X-RateLimit-Reset", "error.metadata.raw" for words
// in a gateway's copy of the upstream's error).
const (
	SourceRetryAfterMs = "retry-after-ms"
	SourceRetryAfter   = "retry-after"
	SourceRetryInfo    = "error.details.RetryInfo.retryDelay" // Gemini
	SourceMessage      = "message"                            // "Please try again in 1.2s" (OpenAI, Groq)
	SourceBody         = "body"                               // words in a body that is not JSON
	SourceRateLimit    = "ratelimit"                          // the IETF draft's structured RateLimit header
)

// HintSources lists every form of a wait Rebound reads, in order of
// precedence, as docs/providers.md names them ("Waits the provider gave").
func HintSources() []string {
	return []string{
		SourceRetryAfterMs, "x-ms-retry-after-ms", SourceRetryAfter,
		SourceRetryInfo, "<body retry field>", "<body>.headers.retry-after",
		SourceMessage, "<body text>",
		"*ratelimit*reset* (429)", SourceRateLimit + " (429)", "<body>.headers.*ratelimit*reset*", "<body reset field>",
	}
}

// hint is one wait a provider gave and where.
type hint struct {
	d      time.Duration
	source string
	depth  int  // of a body field: how deep it sits
	coarse bool // in seconds rather than milliseconds
}

// retryHint reads how long the provider asked to wait, and where it said so:
// the Retry-After headers first (on any status); then, on a failure a wait
// can apply to (waitsMatter), a retry field of the error body (Gemini's
// RetryInfo among them) or a Retry-After a gateway forwarded in the body,
// the provider's words ("Please try again in 1.2s") in its message or
// elsewhere in the body, and last the reset times of the exhausted limits.
// err is a Retry-After header that was present but unusable.
func retryHint(e *llm.Error, code Code, now time.Time) (d time.Duration, source string, err error) {
	d, source, ok, err := retryAfter(e.Header, now)
	if ok {
		return d, source, nil
	}
	if !waitsMatter(code, e.Status) {
		return 0, "", err
	}
	b := readHints(e.Body, e.Message, now)
	if h, ok := first(b.retry); ok {
		return h.d, h.source, err
	}
	if d, ok := phraseHint(e.Message, now); ok {
		return d, SourceMessage, err // about this very refusal: more precise than a reset time
	}
	if h, ok := first(b.words); ok {
		return h.d, h.source, err
	}
	resets := b.resets
	if e.Status == 429 && !e.InStream { // reset headers come on every response: only a 429's say what was hit
		resets = append(resets, headerResets(e.Header, "", nil, now)...)
	}
	if h, ok := longest(resets); ok {
		return h.d, h.source, err
	}
	return 0, "", err
}

// waitsMatter: the failures whose body and reset headers are read for a
// wait. A wait read from anything but Retry-After on, say, a 400 would be a
// number that happens to stand near "retry".
func waitsMatter(code Code, status int) bool {
	switch code {
	case RateLimit, Quota, Overloaded, Server:
		return true
	}
	return status == 429 || status == 503
}

// first is the hint of the shallowest field, milliseconds before seconds.
func first(hs []hint) (hint, bool) {
	if len(hs) == 0 {
		return hint{}, false
	}
	return slices.MinFunc(hs, func(a, b hint) int {
		return cmp.Or(cmp.Compare(a.depth, b.depth), compareBool(a.coarse, b.coarse), strings.Compare(a.source, b.source))
	}), true
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// longest is the latest reset among exhausted limits: until all of them
// reset, the next request is refused again.
func longest(hs []hint) (hint, bool) {
	if len(hs) == 0 {
		return hint{}, false
	}
	return slices.MaxFunc(hs, func(a, b hint) int {
		return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(b.source, a.source))
	}), true
}

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
	values := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if lower := strings.ToLower(k); len(h[k]) > 0 && values[lower] == "" {
			values[lower] = h[k][0]
		}
	}
	name := func(lower string) string {
		if n, ok := names[lower]; ok {
			return prefix + n
		}
		return prefix + lower
	}
	var out []hint
	for _, lower := range slices.Sorted(maps.Keys(values)) {
		if lower == SourceRateLimit {
			if d, ok := structuredReset(values[lower], now); ok {
				out = append(out, hint{d: d, source: name(lower)})
			}
			continue
		}
		parts := strings.Split(lower, "-")
		at := slices.IndexFunc(parts, func(p string) bool { return p == "reset" || p == "resets" })
		if at < 0 || !isRateLimitName(parts) {
			continue
		}
		rem := slices.Clone(parts)
		rem[at] = "remaining"
		if left, ok := parseCount(values[strings.Join(rem, "-")]); ok && left > 0 {
			continue
		}
		millis := slices.ContainsFunc(parts, func(p string) bool { return p == "ms" || p == "millis" || p == "milliseconds" })
		if d, ok := parseWait(values[lower], millis, now); ok {
			out = append(out, hint{d: d, source: name(lower)})
		}
	}
	return out
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

// Words. Providers and gateways say when to come back in their messages:
// "Please try again in 1.2s" (OpenAI, Groq), "Please retry after 20 seconds"
// (Azure), "Please wait 46 seconds before retrying" (GitHub Models, Azure AI
// Foundry), "Please retry in 2.5s" (Gemini), "Limit resets at: 2026-05-31
// 10:04:41 UTC" (LiteLLM), "resets at 2026-05-15T15:00:00Z" (MiniMax). A wait
// is a verb of coming back (try again, retry, wait, reset, …), an optional
// preposition, then a duration with its unit or a time with its zone; a
// number without a unit, or in a sentence without such a verb, is not one.
var phraseRE = sync.OnceValue(func() *regexp.Regexp {
	const (
		verb   = `(?:try(?:ing)?\s+again|retry(?:ing)?|wait(?:ing)?|resets?|refresh(?:es|ed)?|replenish(?:es|ed)?|available\s+again|come\s+back)`
		object = `(?:\s+(?:your|the|this)\s+request|\s+it)?`
		prep   = `(?:\s*:?\s*(?:in|after|for|at|until|on|by)\b)?\s*:?\s*(?:(?:about|approximately|around|roughly|at\s+least|~)\s*)?`
		num    = `(?:\d+(?:\.\d+)?\s*|(?:an?|one)\s+)`
		unit   = `(?:milliseconds?|millis|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)`
		dur    = num + unit + `(?:(?:\s*,\s*|\s+and\s+|\s*)\d+(?:\.\d+)?\s*` + unit + `)*\b`
		stamp  = `\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|UTC|GMT|[+-]\d{2}:?\d{2})`
		date   = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,\s+\d{1,2}[ -][A-Za-z]{3}[ -]\d{2,4}\s+\d{2}:\d{2}:\d{2}\s+GMT`
	)
	return regexp.MustCompile(`(?i)\b` + verb + object + prep + `(` + stamp + `|` + date + `|` + dur + `)`)
})

var durPartRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(?:(\d+(?:\.\d+)?)\s*|\b(?:an?|one)\s+)(milliseconds?|millis|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)`)
})

// phraseHint is the first wait the words of text give.
func phraseHint(text string, now time.Time) (time.Duration, bool) {
	if len(text) > maxHintText {
		text = text[:maxHintText]
	}
	for _, m := range phraseRE().FindAllStringSubmatch(text, 16) {
		if d, ok := phraseWait(m[1], now); ok {
			return d, true
		}
	}
	return 0, false
}

const maxHintText = 64 << 10

func phraseWait(q string, now time.Time) (time.Duration, bool) {
	if q[0] >= '0' && q[0] <= '9' && len(q) >= 16 && q[4] == '-' {
		at, ok := parseTime(strings.TrimSpace(q))
		return max(at.Sub(now), 0), ok
	}
	if at, err := http.ParseTime(q); err == nil {
		return max(at.Sub(now), 0), true
	}
	var secs float64
	for _, p := range durPartRE().FindAllStringSubmatch(q, -1) {
		n, err := strconv.ParseFloat(p[1], 64)
		if p[1] == "" || err != nil {
			n = 1 // "a minute", "an hour", "one second"
		}
		secs += n * unitSeconds(strings.ToLower(p[2]))
	}
	return fromSeconds(secs), true
}

func unitSeconds(u string) float64 {
	switch {
	case strings.HasPrefix(u, "ms"), strings.HasPrefix(u, "milli"):
		return 1e-3
	case strings.HasPrefix(u, "s"):
		return 1
	case strings.HasPrefix(u, "m"):
		return 60
	case strings.HasPrefix(u, "h"):
		return 3600
	}
	return 86400
}

// The error body. Besides the message, providers put a wait in fields of
// their own (OpenRouter's error.metadata.retry_after_seconds, Gemini's
// RetryInfo), and gateways forward the upstream's headers in it (OpenRouter's
// error.metadata.headers) or its whole error as text (error.metadata.raw).

// bodyHints are the waits found in an error body, by kind.
type bodyHints struct {
	retry  []hint // retry fields and forwarded Retry-After headers
	words  []hint // words in the body's texts other than the message
	resets []hint // forwarded reset headers and reset fields of exhausted limits
}

const (
	maxBodyDepth  = 12
	maxBodyNodes  = 4096
	maxEmbedded   = 2 // JSON in a string in JSON (metadata.raw), at most this deep
	maxEmbedBytes = 16 << 10
)

// retryKeys are the retry fields, by name with case, '_' and '-' dropped;
// true when the value is in milliseconds.
var retryKeys = map[string]bool{
	"retryafter": false, "retryafterseconds": false, "retryaftersecs": false,
	"retryafterms": true, "retryaftermillis": true, "retryaftermilliseconds": true,
	"retrydelay": false, "retrydelayseconds": false, "retrydelayms": true,
	"retryin": false, "retryinseconds": false, "retryinms": true,
}

var resetKeyRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^x?(?:ratelimit)?resets?(?:at|in|after|time)?(ms|millis|milliseconds|s|secs|seconds)?$`)
})

func normKey(k string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(k))
}

// readHints walks the JSON of an error body (a body that is not JSON is
// only read for words) within fixed bounds, and collects its waits.
func readHints(body []byte, message string, now time.Time) bodyHints {
	var b bodyHints
	if len(body) == 0 {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var root any
	if dec.Decode(&root) != nil {
		if d, ok := phraseHint(string(body), now); ok {
			b.words = append(b.words, hint{d: d, source: SourceBody})
		}
		return b
	}
	nodes := maxBodyNodes
	b.walk(root, "", 0, 0, &nodes, message, now)
	return b
}

func (b *bodyHints) walk(v any, path string, depth, embedded int, nodes *int, message string, now time.Time) {
	if depth > maxBodyDepth || *nodes <= 0 {
		return
	}
	*nodes--
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			b.walk(x, path, depth+1, embedded, nodes, message, now)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			p := k
			if path != "" {
				p = path + "." + k
			}
			b.field(t, k, p, depth, now)
			b.walk(t[k], p, depth+1, embedded, nodes, message, now)
		}
	case string:
		s := strings.TrimSpace(t)
		if embedded < maxEmbedded && len(s) <= maxEmbedBytes && (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) {
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			var inner any
			if dec.Decode(&inner) == nil {
				b.walk(inner, path, depth+1, embedded+1, nodes, message, now)
				return
			}
		}
		if path != "" && t != message {
			if d, ok := phraseHint(t, now); ok {
				b.words = append(b.words, hint{d: d, source: path, depth: depth})
			}
		}
	}
}

// field reads the field k of obj (at path p) for a wait.
func (b *bodyHints) field(obj map[string]any, k, p string, depth int, now time.Time) {
	v := obj[k]
	nk := normKey(k)
	if millis, ok := retryKeys[nk]; ok {
		if d, ok := parseWait(scalar(v), millis, now); ok {
			source := p
			if typ, _ := obj["@type"].(string); nk == "retrydelay" && strings.HasSuffix(typ, "google.rpc.RetryInfo") {
				source = strings.TrimSuffix(p, k) + "RetryInfo." + k // error.details.RetryInfo.retryDelay
			}
			b.retry = append(b.retry, hint{d: d, source: source, depth: depth, coarse: !millis})
		}
		return
	}
	if m := resetKeyRE().FindStringSubmatch(nk); m != nil {
		if left, ok := parseCount(scalar(siblingRemaining(obj))); ok && left > 0 {
			return
		}
		millis := strings.HasPrefix(m[1], "m")
		if d, ok := parseWait(scalar(v), millis, now); ok {
			b.resets = append(b.resets, hint{d: d, source: p, depth: depth})
		}
		return
	}
	if nk == "headers" {
		if fwd, ok := v.(map[string]any); ok {
			b.forwarded(fwd, p+".", depth, now)
		}
	}
}

// forwarded reads the headers a gateway copied into the body.
func (b *bodyHints) forwarded(fwd map[string]any, prefix string, depth int, now time.Time) {
	h := http.Header{}
	names := map[string]string{} // lower case → as written
	for _, k := range slices.Sorted(maps.Keys(fwd)) {
		lower := strings.ToLower(k)
		if v := scalar(fwd[k]); v != "" && names[lower] == "" {
			h.Set(lower, v)
			names[lower] = k
		}
	}
	if d, src, ok, _ := retryAfter(h, now); ok {
		b.retry = append(b.retry, hint{d: d, source: prefix + names[src], depth: depth + 1, coarse: src == SourceRetryAfter})
	}
	b.resets = append(b.resets, headerResets(h, prefix, names, now)...)
}

// siblingRemaining is the remaining count beside a reset field, if any.
func siblingRemaining(obj map[string]any) any {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch normKey(k) {
		case "remaining", "ratelimitremaining", "xratelimitremaining":
			return obj[k]
		}
	}
	return nil
}

// scalar is a JSON string or number as text; "" for anything else.
func scalar(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	}
	return ""
}

// waitText is a wait as a person reads it: "20 ms", "1.2 s", "37 s", "6m0s".
func waitText(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
	case d == maxWait:
		return "longer than Rebound can wait"
	}
	return d.Round(time.Second).String()
}

// asked reports a wait the provider asked for (a Retry-After header, its
// own or forwarded, a retry field, its words), as against the time a
// limit resets (a reset header or field, the RateLimit header, and Gemini's
// RetryInfo, which says when the quota refills).
func asked(source string) bool {
	last := normKey(source[strings.LastIndexByte(source, '.')+1:])
	return !strings.Contains(last, "reset") && last != SourceRateLimit && !strings.HasSuffix(source, "RetryInfo.retryDelay")
}

// RetryAfterText says what the provider asked, and how: "the provider asked
// to wait 2 s (retry-after)" or "the provider says the limit resets in 37 s
// (x-ratelimit-reset-tokens)"; "" when it did not say.
func (f *Failure) RetryAfterText() string {
	if f.RetryAfterMs == nil {
		return ""
	}
	d := time.Duration(*f.RetryAfterMs) * time.Millisecond
	if asked(f.RetryAfterSource) {
		return "the provider asked to wait " + waitText(d) + " (" + cmp.Or(f.RetryAfterSource, SourceRetryAfter) + ")"
	}
	return "the provider says the limit resets in " + waitText(d) + " (" + f.RetryAfterSource + ")"
}
