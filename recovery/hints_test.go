package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// epoch is synctest's clock at the start of a bubble, where every test
// here that reads a time runs.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// waitOf classifies e (inside a bubble: time.Now is epoch) and returns the
// wait it carries and where from; ms is -1 when there is none.
func waitOf(e *llm.Error) (ms int64, source string) {
	f := recovery.Classify(e)
	if f.RetryAfterMs == nil {
		if f.RetryAfterSource != "" {
			panic("a source without a wait: " + f.RetryAfterSource)
		}
		return -1, ""
	}
	return *f.RetryAfterMs, f.RetryAfterSource
}

// limited429 is a 429 as a provider sends it, with the given headers
// (name, value, name, value, …), body and message.
func limited429(body, message string, kv ...string) *llm.Error {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return &llm.Error{Status: 429, Header: h, Body: []byte(body), Message: message}
}

// Every form of a wait the issue names (#31, item 3), each read with its
// source; and the failures that carry none.
func TestRetryHint_Forms(t *testing.T) {
	tests := []struct {
		name   string
		err    *llm.Error
		ms     int64 // -1: no wait
		source string
	}{
		// Headers that ask for a wait.
		{"fractional retry-after", limited429("", "", "Retry-After", "2.73"), 2730, "retry-after"},
		{"retry-after-ms", limited429("", "", "retry-after-ms", "1500"), 1500, "retry-after-ms"},
		{"x-ms-retry-after-ms", limited429("", "", "x-ms-retry-after-ms", "2500"), 2500, "x-ms-retry-after-ms"},

		// Reset headers, whatever their names and units.
		{"Cerebras tokens per minute", limited429("", "",
			"x-ratelimit-remaining-tokens-minute", "0", "x-ratelimit-reset-tokens-minute", "11.382867097854614",
			"x-ratelimit-remaining-requests-day", "14000", "x-ratelimit-reset-requests-day", "33011.382867097855"),
			11382, "x-ratelimit-reset-tokens-minute"},
		{"Cerebras requests per day", limited429("", "",
			"x-ratelimit-remaining-requests-day", "0", "x-ratelimit-reset-requests-day", "33011.382867097855"),
			33011382, "x-ratelimit-reset-requests-day"},
		{"epoch seconds", limited429("", "", "X-RateLimit-Reset", "946684830"), 30000, "x-ratelimit-reset"},
		{"epoch seconds with a fraction", limited429("", "", "X-RateLimit-Reset", "946684830.25"), 30250, "x-ratelimit-reset"},
		{"epoch milliseconds", limited429("", "", "X-RateLimit-Reset", "946684830500"), 30500, "x-ratelimit-reset"},
		{"seconds", limited429("", "", "X-RateLimit-Reset", "30"), 30000, "x-ratelimit-reset"},
		{"an epoch in the past is now", limited429("", "", "X-RateLimit-Reset", "946684000"), 0, "x-ratelimit-reset"},
		{"milliseconds by name", limited429("", "", "X-RateLimit-Reset-Ms", "1500"), 1500, "x-ratelimit-reset-ms"},
		{"1m30s", limited429("", "", "x-ratelimit-reset-tokens", "1m30s"), 90000, "x-ratelimit-reset-tokens"},
		{"6m0s", limited429("", "", "x-ratelimit-reset-requests", "6m0s"), 360000, "x-ratelimit-reset-requests"},
		{"2ms", limited429("", "", "x-ratelimit-reset-requests", "2ms"), 2, "x-ratelimit-reset-requests"},
		{"500ms", limited429("", "", "x-ratelimit-reset-requests", "500ms"), 500, "x-ratelimit-reset-requests"},
		{"1h2m3.5s", limited429("", "", "x-ratelimit-reset-requests", "1h2m3.5s"), 3723500, "x-ratelimit-reset-requests"},
		{"RFC 3339", limited429("", "", "x-ratelimit-reset", "2000-01-01T00:00:42Z"), 42000, "x-ratelimit-reset"},
		{"RFC 3339 with an offset", limited429("", "", "x-ratelimit-reset", "2000-01-01T01:00:42+01:00"), 42000, "x-ratelimit-reset"},
		{"HTTP date", limited429("", "", "x-ratelimit-reset", "Sat, 01 Jan 2000 00:00:42 GMT"), 42000, "x-ratelimit-reset"},
		{"Anthropic", limited429("", "", "anthropic-ratelimit-output-tokens-remaining", "0",
			"anthropic-ratelimit-output-tokens-reset", "2000-01-01T00:00:09Z"), 9000, "anthropic-ratelimit-output-tokens-reset"},
		{"IETF draft RateLimit-Reset", limited429("", "", "RateLimit-Remaining", "0", "RateLimit-Reset", "53"), 53000, "ratelimit-reset"},
		{"dashed rate-limit", limited429("", "", "X-Rate-Limit-Remaining", "0", "X-Rate-Limit-Reset", "946684812"), 12000, "x-rate-limit-reset"},
		{"structured RateLimit, older draft", limited429("", "", "RateLimit", "limit=100, remaining=0, reset=20"), 20000, "ratelimit"},
		{"structured RateLimit, list", limited429("", "", "RateLimit", `"minute";r=0;t=30, "day";r=10;t=3600`,
			"RateLimit-Policy", `"minute";q=60;w=60, "day";q=1000;w=86400`), 30000, "ratelimit"},
		{"a name in any casing, as a map holds it", &llm.Error{Status: 429, Header: http.Header{"x-ratelimit-remaining-tokens": {"0"}, "x-RateLimit-Reset-Tokens": {"3s"}}},
			3000, "x-ratelimit-reset-tokens"},
		{"the longest of the exhausted limits", limited429("", "",
			"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2s",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "7s"), 7000, "x-ratelimit-reset-tokens"},

		// In the body.
		{"OpenRouter forwards the upstream's headers", limited429(
			`{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"946684805000"}}}}`,
			"Rate limit exceeded: free-models-per-min."), 5000, "error.metadata.headers.X-RateLimit-Reset"},
		{"a forwarded Retry-After", limited429(`{"error":{"message":"Provider returned error","code":429,"metadata":{"headers":{"Retry-After":"7"}}}}`,
			"Provider returned error"), 7000, "error.metadata.headers.Retry-After"},
		{"retry_after", limited429(`{"error":{"message":"slow down","retry_after":12}}`, "slow down"), 12000, "error.retry_after"},
		{"retryAfter as text at the top", limited429(`{"message":"slow down","retryAfter":"3.5"}`, "slow down"), 3500, "retryAfter"},
		{"retry_after_ms", limited429(`{"error":{"retry_after_ms":1500}}`, ""), 1500, "error.retry_after_ms"},
		{"retry_after_seconds deep", limited429(`{"error":{"metadata":{"retry_after_seconds":17,"headers":{"Retry-After":"18"}}}}`, ""),
			17000, "error.metadata.retry_after_seconds"},
		{"Gemini RetryInfo", limited429(`[{"error":{"code":429,"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}]`, ""),
			37000, "error.details.RetryInfo.retryDelay"},
		{"a reset field", limited429(`{"error":{"rate_limit":{"remaining":0,"reset_at":"2000-01-01T00:00:08Z"}}}`, ""), 8000, "error.rate_limit.reset_at"},
		{"a reset field of a limit not hit", limited429(`{"error":{"rate_limit":{"remaining":3,"reset_at":"2000-01-01T00:00:08Z"}}}`, ""), -1, ""},
		{"words in the upstream's error (JSON in a string)", limited429(
			`{"error":{"message":"Provider returned error","metadata":{"raw":"{\"error\":{\"message\":\"Please try again in 20s.\"}}"}}}`, "Provider returned error"),
			20000, "error.metadata.raw.error.message"},
		{"words in the upstream's error (text)", limited429(
			`{"error":{"message":"Provider returned error","metadata":{"raw":"rate limited upstream, retry after 30 seconds"}}}`, "Provider returned error"),
			30000, "error.metadata.raw"},
		{"words in a page", limited429(`<html><body>Too many requests. Please retry after 30 seconds.</body></html>`, "Too Many Requests"), 30000, "body"},

		// Words, in the message.
		{"try again in 20s", limited429("", "Please try again in 20s."), 20000, "message"},
		{"retry after 30 seconds", limited429("", "Please retry after 30 seconds."), 30000, "message"},
		{"try again in 1 minute", limited429("", "Too many requests, try again in 1 minute"), 60000, "message"},
		{"retry in 2.5s", limited429("", "Quota exceeded for metric. Please retry in 2.5s."), 2500, "message"},
		{"wait 12 seconds", limited429("", "Rate limit of 10 per 60s exceeded for UserByModelByMinute. Please wait 12 seconds before retrying."), 12000, "message"},
		{"in 1m30s", limited429("", "Rate limit reached. Try again in 1m30s"), 90000, "message"},
		{"after a time", limited429("", "Daily limit reached, try again after 2000-01-01T00:01:00Z"), 60000, "message"},
		{"resets at, LiteLLM", limited429("", "Rate limit exceeded for api_key: abc. Limit type: requests. Current limit: 50, Remaining: 0. Limit resets at: 2000-01-01 00:00:05 UTC"), 5000, "message"},
		{"a minute", limited429("", "Please try again in a minute."), 60000, "message"},
		{"minutes and seconds", limited429("", "Retry in 1 minute and 30 seconds"), 90000, "message"},
		{"milliseconds", limited429("", "Please try again in 250ms"), 250, "message"},
		{"in-stream", &llm.Error{InStream: true, Code: "rate_limit_exceeded", Message: "Rate limit reached for requests. Please try again in 4s.",
			Body: []byte(`{"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for requests. Please try again in 4s."}}`)}, 4000, "message"},

		// Precedence.
		{"Retry-After before a body field", limited429(`{"error":{"retry_after":12}}`, "", "Retry-After", "2"), 2000, "retry-after"},
		{"a body field before words", limited429(`{"error":{"retry_after":12}}`, "Please try again in 3s"), 12000, "error.retry_after"},
		{"words before a reset header", limited429("", "Please try again in 1.2s", "x-ratelimit-reset-requests", "6m0s"), 1200, "message"},

		// None.
		{"numbers without a verb", limited429("", "Limit 30000, Used 29500, Requested 1200."), -1, ""},
		{"a count, not a wait", limited429("", "You can retry 3 times."), -1, ""},
		{"later", limited429("", "Please try again later."), -1, ""},
		{"a time taken", limited429("", "The request took 30 seconds; the limit is 60s."), -1, ""},
		{"a time without a zone", limited429("", "Try again after 2000-01-01 00:01:00"), -1, ""},
		{"a limit with some left", limited429("", "", "x-ratelimit-remaining", "5", "x-ratelimit-reset", "30"), -1, ""},
		{"RateLimit-Policy alone", limited429("", "", "RateLimit-Policy", `"minute";q=60;w=60`), -1, ""},
		{"a negative reset", limited429("", "", "x-ratelimit-reset", "-30"), -1, ""},
		{"NaN", limited429("", "", "x-ratelimit-reset", "NaN"), -1, ""},
		{"an exponent", limited429("", "", "x-ratelimit-reset", "3e1"), -1, ""},
		{"a negative duration", limited429("", "", "x-ratelimit-reset", "-1m"), -1, ""},
		{"inner space", limited429("", "", "x-ratelimit-reset", "3 0"), -1, ""},
		{"a negative body field", limited429(`{"error":{"retry_after":-5}}`, ""), -1, ""},
		{"words on a 400", &llm.Error{Status: 400, Message: "Invalid request, try again in 20s", Header: http.Header{}}, -1, ""},
		{"reset headers on a 503", &llm.Error{Status: 503, Header: http.Header{"X-Ratelimit-Reset": {"30"}}}, -1, ""},
		{"reset headers of a 200 before an in-stream error", &llm.Error{InStream: true, Code: "rate_limit_exceeded",
			Header: http.Header{"X-Ratelimit-Reset-Requests": {"30s"}}}, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ms, source := waitOf(tt.err)
				if ms != tt.ms || source != tt.source {
					t.Errorf("wait = %d ms from %q, want %d ms from %q", ms, source, tt.ms, tt.source)
				}
			})
		})
	}
}

// A wait written in a form the generator picks at random (header, body
// field at any depth, forwarded headers, words; every unit, fraction,
// epoch and time) reads back as the wait meant, to the form's precision.
func TestRetryHint_EveryFormRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 3))
		for i := range testkit.Cases(5000, 1000) {
			c := genWait(r)
			ms, source := waitOf(c.err)
			if ms != c.want || !strings.EqualFold(source, c.source) {
				t.Fatalf("case %d, %s: wait = %d ms from %q, want %d ms from %q\nheaders %v\nbody %s\nmessage %q",
					i, c.form, ms, source, c.want, c.source, c.err.Header, c.err.Body, c.err.Message)
			}
		}
	})
}

type genCase struct {
	form   string
	err    *llm.Error
	want   int64
	source string
}

// genWait writes a random wait in a random form.
func genWait(r *rand.Rand) genCase {
	// The wait, in ms, up to two hours; each form rounds it to what it
	// can say.
	w := int64(r.IntN(7200_000))
	if r.IntN(4) == 0 {
		w = int64(r.IntN(5000))
	}
	casing := func(s string) string {
		switch r.IntN(3) {
		case 0:
			return strings.ToUpper(s)
		case 1:
			return http.CanonicalHeaderKey(s)
		}
		return s
	}
	secs := func(ms int64) string { return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) }
	// value writes w as a reset value; it returns the wait it says.
	value := func() (string, int64, string) {
		switch r.IntN(7) {
		case 0:
			return (time.Duration(w) * time.Millisecond).String(), w, "duration"
		case 1:
			return secs(w), w, "seconds"
		case 2:
			s := w / 1000
			return strconv.FormatInt(epoch.Unix()+s, 10), s * 1000, "epoch seconds"
		case 3:
			return strconv.FormatInt(epoch.UnixMilli()+w, 10), w, "epoch ms"
		case 4:
			return epoch.Add(time.Duration(w) * time.Millisecond).Format(time.RFC3339Nano), w, "RFC 3339"
		case 5:
			s := w / 1000
			return epoch.Add(time.Duration(s) * time.Second).Format(http.TimeFormat), s * 1000, "HTTP date"
		}
		return strconv.FormatInt(epoch.UnixMilli()+w, 10) + ".0", w, "epoch ms with a fraction"
	}
	resetName := func() (reset, remaining string) {
		dim := []string{"requests", "tokens", "input-tokens", "output-tokens"}[r.IntN(4)]
		period := []string{"", "-minute", "-day", "-hour"}[r.IntN(4)]
		switch r.IntN(5) {
		case 0:
			return "x-ratelimit-reset-" + dim + period, "x-ratelimit-remaining-" + dim + period
		case 1:
			return "anthropic-ratelimit-" + dim + "-reset", "anthropic-ratelimit-" + dim + "-remaining"
		case 2:
			return "ratelimit-reset", "ratelimit-remaining"
		case 3:
			return "x-rate-limit-reset", "x-rate-limit-remaining"
		}
		return "x-ratelimit-reset", "x-ratelimit-remaining"
	}
	// nest puts the object obj (JSON) under a random path of wrappers; it
	// returns the body and the path's prefix.
	nest := func(key, val string) (string, string) {
		body := `{"` + key + `":` + val + `}`
		path := key
		for range r.IntN(4) {
			k := []string{"error", "metadata", "details", "data"}[r.IntN(4)]
			if r.IntN(3) == 0 {
				body = `[` + body + `]` // arrays are not part of a path
			}
			body = `{"` + k + `":` + body + `,"message":"Rate limited"}`
			path = k + "." + path
		}
		return body, path
	}
	e := &llm.Error{Status: 429, Header: http.Header{}}
	switch form := r.IntN(6); form {
	case 0: // a header that asks for a wait
		switch r.IntN(3) {
		case 0:
			e.Header.Set(casing("retry-after"), secs(w))
			return genCase{"retry-after " + secs(w), e, w, "retry-after"}
		case 1:
			e.Header.Set(casing("retry-after-ms"), strconv.FormatInt(w, 10))
			return genCase{"retry-after-ms", e, w, "retry-after-ms"}
		}
		e.Header.Set(casing("x-ms-retry-after-ms"), strconv.FormatInt(w, 10)+".25")
		return genCase{"x-ms-retry-after-ms", e, w, "x-ms-retry-after-ms"}
	case 1: // a reset header, with a decoy limit that has some left
		reset, remaining := resetName()
		v, want, how := value()
		e.Header.Set(casing(reset), v)
		if r.IntN(2) == 0 {
			e.Header.Set(casing(remaining), "0")
		}
		e.Header.Set("X-Decoy-Ratelimit-Reset", "99999")
		e.Header.Set("X-Decoy-Ratelimit-Remaining", "12")
		return genCase{"reset header, " + how, e, want, reset}
	case 2: // a retry field in the body
		key := []string{"retry_after", "retryAfter", "retry-after", "RETRY_AFTER", "retry_after_seconds", "retryAfterSeconds"}[r.IntN(6)]
		val := secs(w)
		if r.IntN(2) == 0 {
			val = `"` + val + `"`
		}
		if r.IntN(3) == 0 {
			key = []string{"retry_after_ms", "retryAfterMs", "retry_after_milliseconds"}[r.IntN(3)]
			val = strconv.FormatInt(w, 10)
		}
		body, path := nest(key, val)
		e.Body = []byte(body)
		return genCase{"body field", e, w, path}
	case 3: // headers a gateway forwarded in the body
		if r.IntN(2) == 0 {
			body, path := nest("headers", `{"`+casing("retry-after")+`":"`+secs(w)+`"}`)
			e.Body = []byte(body)
			return genCase{"forwarded retry-after", e, w, path + ".retry-after"}
		}
		reset, remaining := resetName()
		v, want, how := value()
		reset = casing(reset)
		body, path := nest("headers", `{"`+reset+`":"`+v+`","`+remaining+`":"0"}`)
		e.Body = []byte(body)
		return genCase{"forwarded reset, " + how, e, want, path + "." + reset}
	}
	// Words.
	d := time.Duration(w) * time.Millisecond
	var q string
	want := w
	switch r.IntN(6) {
	case 0:
		q = d.String()
	case 1:
		s := w / 1000
		q, want = strconv.FormatInt(s, 10)+[]string{" seconds", " second", "s", " secs", " sec"}[r.IntN(5)], s*1000
	case 2:
		m, s := w/60000, w%60000/1000
		q, want = fmt.Sprintf("%d minutes and %d seconds", m, s), m*60000+s*1000
	case 3:
		q = secs(w) + "s"
	case 4:
		q, want = strconv.FormatInt(w, 10)+" milliseconds", w
	default:
		q = epoch.Add(d).Format(time.RFC3339Nano)
	}
	verb := []string{"Please try again in ", "retry after ", "Try again in ", "Please retry in ", "wait ", "Please wait ", "Your limit resets in ", "try again after ", "available again in "}[r.IntN(9)]
	if strings.HasPrefix(q, "2000-") {
		verb = []string{"try again after ", "Limit resets at: ", "retry at ", "wait until "}[r.IntN(4)]
	}
	if r.IntN(2) == 0 {
		verb = strings.ToUpper(verb)
	}
	text := "Rate limit reached for model-x (limit 60, used 60, requested 1). " + verb + q + ". Visit the console for 3 more things."
	switch r.IntN(3) {
	case 0:
		e.Message = text
		return genCase{"words", e, want, "message"}
	case 1:
		e.Status, e.InStream, e.Code, e.Message = 0, true, "rate_limit_exceeded", text
		return genCase{"words in a stream", e, want, "message"}
	}
	raw, _ := json.Marshal(text)
	body, path := nest("raw", string(raw))
	e.Body, e.Message = []byte(body), "Provider returned error"
	return genCase{"words in the body", e, want, path}
}

// Garbage never gives a wait that is slept past max_retry_after, never
// panics, never gives a negative wait; a value that is not a wait (a sign,
// NaN, an exponent, words) gives none, and a number in a sentence that
// does not say to come back is not one.
func TestRetryHint_GarbageIsNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(31, 4))
		notWaits := []string{"-1", "-0.5", "+5", "NaN", "Inf", "-Inf", "1e3", "0x10", "1 5", "soon", "-1m", "1.2.3", ".5", "5.", "∞", "２", "1_000"}
		words := []string{"limit", "used", "requested", "tokens", "the", "model", "took", "for", "per", "minute", "window", "of", "in", "after", "request", "your", "is", "60s", "quota", "at"}
		units := []string{"s", " seconds", "ms", " minutes", "m30s", " hours"}
		pol := recovery.DefaultPolicy()
		for i := range testkit.Cases(3000, 600) {
			e := &llm.Error{Status: []int{429, 503, 500, 0}[r.IntN(4)], Header: http.Header{}}
			if e.Status == 0 {
				e.InStream, e.Code = true, "rate_limit_exceeded"
			}
			bad := notWaits[r.IntN(len(notWaits))]
			switch r.IntN(4) {
			case 0:
				e.Header.Set([]string{"x-ratelimit-reset", "x-ratelimit-reset-tokens-minute", "anthropic-ratelimit-tokens-reset", "RateLimit-Reset"}[r.IntN(4)], bad)
			case 1:
				e.Body = []byte(`{"error":{"` + []string{"retry_after", "retryAfterMs", "reset_at"}[r.IntN(3)] + `":"` + bad + `"}}`)
			case 2:
				e.Header.Set("RateLimit", `"m";r=0;t=`+bad)
			default:
				var b strings.Builder
				for range 3 + r.IntN(12) {
					b.WriteString(words[r.IntN(len(words))] + " ")
					if r.IntN(3) == 0 {
						b.WriteString(strconv.Itoa(r.IntN(100000)) + units[r.IntN(len(units))] + " ")
					}
				}
				e.Message = b.String()
			}
			if ms, source := waitOf(e); ms != -1 {
				t.Fatalf("case %d: %v %s %q gave a wait of %d ms from %q", i, e.Header, e.Body, e.Message, ms, source)
			}
		}
		// Random bytes anywhere: no panic, no negative wait, and whatever
		// is read, the policy never sleeps longer than its cap. Its own
		// stream, so its cases do not depend on the loop above's count.
		r = rand.New(rand.NewPCG(31, 5))
		for i := range 3000 {
			junk := func() string {
				const chars = "0123456789.-+eE:TZ smhd,;=\"retryagainwait"
				b := make([]byte, r.IntN(40))
				for k := range b {
					b[k] = chars[r.IntN(len(chars))]
				}
				return string(b)
			}
			e := &llm.Error{Status: 429, Header: http.Header{
				"X-Ratelimit-Reset": {junk()}, "Retry-After": {junk()}, "Ratelimit": {junk()}},
				Body: []byte(`{"error":{"retry_after":"` + junk() + `","metadata":{"headers":{"X-RateLimit-Reset":"` + junk() + `"}}}}`), Message: "try again in " + junk()}
			f := recovery.Classify(e)
			if f.RetryAfterMs != nil && *f.RetryAfterMs < 0 {
				t.Fatalf("case %d: a negative wait %d from %q", i, *f.RetryAfterMs, f.RetryAfterSource)
			}
			if d := pol.Decide(f, 1); d.Retry && d.Delay > pol.MaxRetryAfter && f.RetryAfterMs != nil {
				t.Fatalf("case %d: sleeps %v, past max_retry_after %v", i, d.Delay, pol.MaxRetryAfter)
			}
		}
	})
}

// A wait from a gateway's forwarded header and one from a message are
// waited for exactly, end to end: the real adapter, the executor with the
// default policy, on synctest's clock.
func TestRetryHint_WaitObserved(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		body   string
		want   time.Duration
	}{
		{"OpenRouter's forwarded reset, epoch ms", http.Header{},
			`{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429,"metadata":{"headers":{"X-RateLimit-Limit":"20","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"946684804000"}}}}`,
			4 * time.Second},
		{"GitHub Models' words", http.Header{},
			`{"error":{"code":"RateLimitReached","message":"Rate limit of 10 per 60s exceeded for UserByModelByMinute. Please wait 3 seconds before retrying."}}`,
			3 * time.Second},
		{"Cerebras' reset header", http.Header{"X-Ratelimit-Remaining-Tokens-Minute": {"0"}, "X-Ratelimit-Reset-Tokens-Minute": {"6.5"}},
			`{"message":"Tokens per minute limit exceeded - too many tokens processed.","type":"too_many_tokens_error","param":"quota","code":"token_quota_exceeded"}`,
			6500 * time.Millisecond},
		{"fractional Retry-After", http.Header{"Retry-After": {"2.73"}}, `{"error":{"message":"slow down"}}`, 2730 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				d := &onceLimited{header: tt.header, body: tt.body, start: start}
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://provider.invalid/v1", APIKey: "sk-test", HTTPClient: d})
				pol := recovery.DefaultPolicy()
				pol.Jitter = 0
				exec := recovery.Executor{Config: recovery.Config{Policy: pol}, Start: start}
				err := exec.Do(t.Context(), recovery.Chain{}, newObserver(t), func(ctx context.Context) error {
					s, err := p.Stream(ctx, hello)
					if err != nil {
						return err
					}
					defer s.Close()
					for {
						if _, err := s.Recv(); err != nil {
							if errors.Is(err, io.EOF) {
								return nil
							}
							return err
						}
					}
				})
				if err != nil {
					t.Fatalf("Do() = %v", err)
				}
				if want := []time.Duration{0, tt.want}; fmt.Sprint(d.at) != fmt.Sprint(want) {
					t.Errorf("requests at %v, want %v", d.at, want)
				}
			})
		})
	}
}

// onceLimited refuses the first request with a 429, then answers.
type onceLimited struct {
	header http.Header
	body   string
	start  time.Time
	at     []time.Duration
}

func (d *onceLimited) Do(req *http.Request) (*http.Response, error) {
	d.at = append(d.at, time.Since(d.start))
	if len(d.at) == 1 {
		h := d.header.Clone()
		h.Set("Content-Type", "application/json")
		return &http.Response{StatusCode: 429, Header: h, Body: io.NopCloser(strings.NewReader(d.body)), Request: req}, nil
	}
	sse := "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(sse)), Request: req}, nil
}

// A source is made of the provider's keys and header names, and is shown to
// a person: it is printable and bounded, keeping the field's own name.
func TestRetryHint_SourceIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		long := strings.Repeat("k\x1b[31m", 60)
		body, _ := json.Marshal(map[string]any{long: map[string]any{long: map[string]any{"retry_after": 3}}})
		ms, source := waitOf(limited429(string(body), ""))
		if ms != 3000 || len(source) > 120 || !strings.HasSuffix(source, ".retry_after") || strings.ContainsAny(source, "\x1b\n") {
			t.Errorf("wait %d ms from %q (%d bytes), want 3000 ms from a printable source of at most 120 bytes ending in .retry_after", ms, source, len(source))
		}
	})
}
