package recovery

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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
	h, ok := bodyHint(e, now)
	if !ok {
		return 0, "", err
	}
	return h.d, shownSource(h.source), err
}

// bodyHint is retryHint past the Retry-After headers, in its order.
func bodyHint(e *llm.Error, now time.Time) (hint, bool) {
	b := readHints(e.Body, e.Message, now)
	if h, ok := first(b.retry); ok {
		return h, true
	}
	if d, ok := phraseHint(e.Message, now); ok {
		return hint{d: d, source: SourceMessage}, true // about this very refusal: more precise than a reset time
	}
	if h, ok := first(b.words); ok {
		return h, true
	}
	resets := b.resets
	if e.Status == 429 && !e.InStream { // reset headers come on every response: only a 429's say what was hit
		resets = append(resets, headerResets(e.Header, "", nil, now)...)
	}
	return longest(resets)
}

// maxSourceLen bounds a source: it is made of what the provider sent (the
// keys of its body, the names of its headers) and is shown to a person.
const maxSourceLen = 120

// shownSource is source printable and at most maxSourceLen bytes, keeping
// its end, which names the field.
func shownSource(source string) string {
	source = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, source)
	if len(source) <= maxSourceLen {
		return source
	}
	cut := len(source) - (maxSourceLen - len("…"))
	for cut < len(source) && !utf8.RuneStart(source[cut]) {
		cut++
	}
	return "…" + source[cut:]
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
