package recovery

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

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
