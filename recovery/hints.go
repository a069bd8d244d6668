package recovery

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// Where a provider's wait came from, as recorded in retryAfterSource.
const (
	SourceRetryAfterMs = "retry-after-ms"
	SourceRetryAfter   = "retry-after"
	SourceRetryInfo    = "error.details.RetryInfo.retryDelay" // Gemini
	SourceMessage      = "message"                            // "Please try again in 1.2s" (OpenAI, Groq)
)

// resetHeaders are the rate-limit reset headers, with the header that says
// how much of that limit is left. They come on every response, so they are
// read only on a 429, and a limit with some left is not the one that was
// hit.
var resetHeaders = []struct{ reset, remaining string }{
	// OpenAI, Groq: durations such as "1s", "6m0s", "20ms", "2m59.56s".
	{"x-ratelimit-reset-requests", "x-ratelimit-remaining-requests"},
	{"x-ratelimit-reset-tokens", "x-ratelimit-remaining-tokens"},
	// Anthropic: RFC 3339 times.
	{"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-requests-remaining"},
	{"anthropic-ratelimit-tokens-reset", "anthropic-ratelimit-tokens-remaining"},
	{"anthropic-ratelimit-input-tokens-reset", "anthropic-ratelimit-input-tokens-remaining"},
	{"anthropic-ratelimit-output-tokens-reset", "anthropic-ratelimit-output-tokens-remaining"},
}

// HintSources lists every source of a wait, in the order they are tried,
// for the docs.
func HintSources() []string {
	s := []string{SourceRetryAfterMs, SourceRetryAfter, SourceRetryInfo, SourceMessage}
	for _, h := range resetHeaders {
		s = append(s, h.reset)
	}
	return s
}

// retryHint reads how long the provider asked to wait, and where it said so:
// the Retry-After headers first (on any status), then, on a rate limit only,
// Gemini's RetryInfo in the body, OpenAI's "Please try again in …" in the
// message, and the reset headers of the exhausted limits. err is a Retry-After
// header that was present but unusable.
func retryHint(e *llm.Error, code Code, now time.Time) (d time.Duration, source string, err error) {
	d, ok, err := ParseRetryAfter(e.Header, now)
	if ok {
		source = SourceRetryAfter
		if e.Header.Get("retry-after-ms") != "" && err == nil {
			source = SourceRetryAfterMs
		}
		return d, source, nil
	}
	if code != RateLimit && e.Status != 429 {
		return 0, "", err
	}
	if d, ok := retryInfo(e.Body); ok {
		return d, SourceRetryInfo, err
	}
	if d, ok := messageHint(e.Message); ok {
		return d, SourceMessage, err // about this very refusal: more precise than a reset time
	}
	if e.Status == 429 && !e.InStream {
		if d, src, ok := resetHint(e, now); ok {
			return d, src, err
		}
	}
	return 0, "", err
}

// resetHint is the longest reset among the limits a 429 may have hit: those
// whose remaining count is 0 or not sent. Until all of those reset, the
// next request is refused again.
func resetHint(e *llm.Error, now time.Time) (time.Duration, string, bool) {
	var best time.Duration
	src := ""
	for _, h := range resetHeaders {
		v := strings.TrimSpace(e.Header.Get(h.reset))
		if v == "" {
			continue
		}
		if rem := strings.TrimSpace(e.Header.Get(h.remaining)); rem != "" && rem != "0" {
			continue
		}
		d, ok := parseReset(v, now)
		if ok && (src == "" || d > best) {
			best, src = d, h.reset
		}
	}
	return best, src, src != ""
}

// parseReset reads a reset header: a Go-style duration (OpenAI, Groq), an
// RFC 3339 time (Anthropic), or plain seconds.
func parseReset(v string, now time.Time) (time.Duration, bool) {
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, 0), true
	}
	if at, err := time.Parse(time.RFC3339, v); err == nil {
		return max(at.Sub(now), 0), true
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < float64(maxWait/time.Second) {
		return time.Duration(s * float64(time.Second)), true
	}
	return 0, false
}

// retryInfo reads google.rpc.RetryInfo's retryDelay ("37s", "0.5s") from the
// details of a Google error body, which Gemini's OpenAI compatibility sends
// as is (an object, or an array of one).
func retryInfo(body []byte) (time.Duration, bool) {
	if len(body) == 0 || !strings.Contains(string(body), "retryDelay") {
		return 0, false
	}
	type errBody struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	var one errBody
	if json.Unmarshal(body, &one) != nil {
		var arr []errBody
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return 0, false
		}
		one = arr[0]
	}
	for _, d := range one.Error.Details {
		if !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") || !strings.HasSuffix(d.RetryDelay, "s") {
			continue
		}
		if secs, err := strconv.ParseFloat(strings.TrimSuffix(d.RetryDelay, "s"), 64); err == nil && secs >= 0 && secs < float64(maxWait/time.Second) {
			return time.Duration(secs * float64(time.Second)), true
		}
	}
	return 0, false
}

// tryAgainIn is OpenAI's and Groq's phrase in a rate limit's message.
var tryAgainIn = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)try again in ((?:[0-9]+(?:\.[0-9]+)?(?:ms|h|m|s))+)`)
})

func messageHint(msg string) (time.Duration, bool) {
	m := tryAgainIn().FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(m[1])
	return d, err == nil && d >= 0
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

// RetryAfterText says what the provider asked, and how: "the provider asked
// to wait 2 s (Retry-After)" or "the provider says the limit resets in 37 s
// (x-ratelimit-reset-tokens)"; "" when it did not say.
func (f *Failure) RetryAfterText() string {
	if f.RetryAfterMs == nil {
		return ""
	}
	d := time.Duration(*f.RetryAfterMs) * time.Millisecond
	switch f.RetryAfterSource {
	case "", SourceRetryAfter, SourceRetryAfterMs:
		return "the provider asked to wait " + waitText(d) + " (" + cmp.Or(f.RetryAfterSource, SourceRetryAfter) + ")"
	}
	return "the provider says the limit resets in " + waitText(d) + " (" + f.RetryAfterSource + ")"
}
