package recovery_test

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
)

// FuzzParseRetryAfter: any pair of headers parses without panicking, into a
// wait that is never negative; a correct value always parses, and what a
// provider writes round-trips (seeds in testdata/fuzz/FuzzParseRetryAfter).
func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, retryAfter, retryAfterMs string, n uint64) {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		if retryAfterMs != "" {
			h.Set("Retry-After-Ms", retryAfterMs)
		}
		d, ok, err := recovery.ParseRetryAfter(h, now)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v: negative", retryAfter, retryAfterMs, d)
		}
		if ok && err != nil {
			t.Fatalf("ParseRetryAfter(%q, %q): ok with error %v", retryAfter, retryAfterMs, err)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q, %q) = %v, not ok", retryAfter, retryAfterMs, d)
		}
		blank := strings.TrimSpace(h.Get("Retry-After")) == "" && strings.TrimSpace(h.Get("Retry-After-Ms")) == ""
		if !ok && (err == nil) != blank {
			t.Fatalf("ParseRetryAfter(%q, %q): not ok, err = %v; an error exactly when a header is present", retryAfter, retryAfterMs, err)
		}

		// Round trips: delta-seconds, milliseconds, an HTTP date.
		secs := time.Duration(math.MaxInt64)
		if n <= uint64(math.MaxInt64/int64(time.Second)) {
			secs = time.Duration(n) * time.Second
		}
		d, ok, err = recovery.ParseRetryAfter(http.Header{"Retry-After": {strconv.FormatUint(n, 10)}}, now)
		if !ok || err != nil || d != secs {
			t.Fatalf("Retry-After %d = %v, %v, %v; want %v", n, d, ok, err, secs)
		}
		ms := time.Duration(math.MaxInt64)
		if n <= uint64(math.MaxInt64/int64(time.Millisecond)) {
			ms = time.Duration(n) * time.Millisecond
		}
		d, ok, err = recovery.ParseRetryAfter(http.Header{"Retry-After-Ms": {strconv.FormatUint(n, 10)}}, now)
		if !ok || err != nil || d != ms {
			t.Fatalf("retry-after-ms %d = %v, %v, %v; want %v", n, d, ok, err, ms)
		}
		frac := strconv.FormatFloat(float64(n%(1<<40))/1000, 'f', -1, 64) // n ms as fractional seconds
		d, ok, err = recovery.ParseRetryAfter(http.Header{"Retry-After": {frac}}, now)
		if !ok || err != nil || d != time.Duration(n%(1<<40))*time.Millisecond {
			t.Fatalf("Retry-After %q = %v, %v, %v; want %v", frac, d, ok, err, time.Duration(n%(1<<40))*time.Millisecond)
		}
		ahead := time.Duration(n%(100*365*24*3600)) * time.Second // within a century
		date := now.Add(ahead).Format(http.TimeFormat)
		d, ok, err = recovery.ParseRetryAfter(http.Header{"Retry-After": {date}}, now)
		if !ok || err != nil || d != ahead {
			t.Fatalf("Retry-After %q = %v, %v, %v; want %v", date, d, ok, err, ahead)
		}
		date = now.Add(-ahead).Format(http.TimeFormat)
		if d, ok, err = recovery.ParseRetryAfter(http.Header{"Retry-After": {date}}, now); !ok || err != nil || d != 0 {
			t.Fatalf("Retry-After %q (past) = %v, %v, %v; want 0", date, d, ok, err)
		}
	})
}

// FuzzRetryHint: whatever header, body and message a failure carries (the
// forms beyond Retry-After: reset headers of any name, retry fields and
// forwarded headers in the body, words), reading its wait does not panic,
// gives a wait that is never negative, with a source exactly when there is
// a wait, that the policy never sleeps past max_retry_after; and a wait of
// n ms written in each form reads back as n ms.
func FuzzRetryHint(f *testing.F) {
	f.Add(429, "x-ratelimit-reset-tokens-minute", "11.382867097854614", []byte(`{"error":{"message":"Rate limit exceeded","code":429,"metadata":{"headers":{"X-RateLimit-Remaining":"0","X-RateLimit-Reset":"946684805000"}}}}`), "Please try again in 1m30s.", uint32(1500))
	f.Add(503, "RateLimit", `"minute";r=0;t=30, "day";r=10;t=3600`, []byte(`{"error":{"retry_after":"2.5"}}`), "Limit resets at: 2000-01-01 00:00:05 UTC", uint32(0))
	f.Add(0, "anthropic-ratelimit-tokens-reset", "2000-01-01T00:00:07Z", []byte(`[{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}]`), "Please wait 46 seconds before retrying.", uint32(7200000))
	f.Add(429, "x-ratelimit-reset", "-1e400", []byte(`{"error":{"metadata":{"raw":"{\"error\":{\"message\":\"try again in NaN s\"}}"}}}`), "retry after 99999999999999999999 hours", uint32(1<<31))
	pol := policyNoJitter()
	f.Fuzz(func(t *testing.T, status int, name, value string, body []byte, message string, n uint32) {
		synctest.Test(t, func(t *testing.T) {
			e := &llm.Error{Status: status, Header: http.Header{}, Body: body, Message: message}
			if status == 0 {
				e.InStream, e.Code = true, "rate_limit_exceeded"
			}
			if name != "" {
				e.Header[name] = []string{value}
			}
			fl := recovery.Classify(e)
			if (fl.RetryAfterMs != nil) != (fl.RetryAfterSource != "") {
				t.Fatalf("wait %v from %q: a wait without a source or a source without one", fl.RetryAfterMs, fl.RetryAfterSource)
			}
			if fl.RetryAfterMs != nil && *fl.RetryAfterMs < 0 {
				t.Fatalf("a negative wait %d from %q", *fl.RetryAfterMs, fl.RetryAfterSource)
			}
			if len(fl.RetryAfterSource) > 120 || strings.ContainsFunc(fl.RetryAfterSource, func(r rune) bool { return !unicode.IsPrint(r) }) {
				t.Fatalf("source %q: not printable or longer than 120 bytes", fl.RetryAfterSource)
			}
			if d := pol.Decide(fl, 1); d.Retry && fl.RetryAfterMs != nil && d.Delay > pol.MaxRetryAfter {
				t.Fatalf("sleeps %v, past max_retry_after %v", d.Delay, pol.MaxRetryAfter)
			}

			// Round trips of n ms, one form after another.
			ms := int64(n)
			secs := strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
			epochMs := strconv.FormatInt(time.Now().UnixMilli()+ms, 10)
			for _, c := range []struct {
				e      *llm.Error
				source string
			}{
				{&llm.Error{Status: 429, Header: http.Header{"Retry-After": {secs}}}, "retry-after"},
				{&llm.Error{Status: 429, Header: http.Header{"X-Ratelimit-Reset-Tokens-Minute": {secs}}}, "x-ratelimit-reset-tokens-minute"},
				{&llm.Error{Status: 429, Header: http.Header{"X-Ratelimit-Reset": {(time.Duration(ms) * time.Millisecond).String()}}}, "x-ratelimit-reset"},
				{&llm.Error{Status: 429, Body: []byte(`{"error":{"metadata":{"headers":{"X-RateLimit-Reset":"` + epochMs + `"}}}}`)}, "error.metadata.headers.X-RateLimit-Reset"},
				{&llm.Error{Status: 429, Body: []byte(`{"error":{"retry_after_ms":` + strconv.FormatInt(ms, 10) + `}}`)}, "error.retry_after_ms"},
				{&llm.Error{Status: 429, Message: "Please try again in " + secs + "s."}, "message"},
			} {
				got := recovery.Classify(c.e)
				if got.RetryAfterMs == nil || *got.RetryAfterMs != ms || got.RetryAfterSource != c.source {
					t.Fatalf("%d ms as %v %s %q: read %v from %q", ms, c.e.Header, c.e.Body, c.e.Message, got.RetryAfterMs, got.RetryAfterSource)
				}
			}
		})
	})
}

// policyNoJitter is the default policy with its delays exact.
func policyNoJitter() recovery.Policy {
	p := recovery.DefaultPolicy()
	p.Jitter = 0
	return p
}

// answerDoer answers every request with one fixed response.
type answerDoer struct {
	status int
	header http.Header
	body   []byte
}

func (d answerDoer) Do(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: d.status, Header: d.header.Clone(), Body: io.NopCloser(strings.NewReader(string(d.body))), Request: req}, nil
}

// FuzzClassify: whatever status, body and headers a provider answers with,
// the adapter and the classifier do not panic, and the failure facts carry
// a known code, a wait that is never negative, and marshal to JSON (seeds in
// testdata/fuzz/FuzzClassify).
func FuzzClassify(f *testing.F) {
	const key = "sk-fuzz-secret-key"
	f.Fuzz(func(t *testing.T, status int, body []byte, retryAfter, retryAfterMs, requestID string) {
		h := http.Header{"Content-Type": {"application/json"}}
		for k, v := range map[string]string{"Retry-After": retryAfter, "Retry-After-Ms": retryAfterMs, "X-Request-Id": requestID} {
			if v != "" {
				h.Set(k, v)
			}
		}
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://fuzz.invalid/v1", APIKey: key,
			HTTPClient: answerDoer{status, h, body}, MaxBytesWithoutProgress: 16 << 10, MaxReplyBytes: 64 << 10})
		err := firstError(t, p)
		if err == nil {
			return // a stream that finished
		}
		fl := recovery.Classify(err)
		if !slices.Contains(recovery.Codes, fl.Code) {
			t.Fatalf("Classify(%v) = code %q, not one of %v", err, fl.Code, recovery.Codes)
		}
		if fl.RetryAfterMs != nil && *fl.RetryAfterMs < 0 {
			t.Fatalf("Classify(%v): RetryAfterMs = %d", err, *fl.RetryAfterMs)
		}
		if fl.Summary() == "" {
			t.Fatalf("Classify(%v): empty summary", err)
		}
		b, jerr := json.Marshal(fl)
		if jerr != nil {
			t.Fatalf("Classify(%v) does not marshal: %v", err, jerr)
		}
		if strings.Contains(string(b), key) || strings.Contains(fl.Summary(), key) || strings.Contains(err.Error(), key) {
			t.Fatalf("the key shows in the facts %s or the error %q", b, err)
		}
		var back recovery.Failure
		if jerr := json.Unmarshal(b, &back); jerr != nil || back.Code != fl.Code {
			t.Fatalf("facts %s do not round-trip: %v", b, jerr)
		}
		_ = recovery.DefaultPolicy().Decide(fl, 1)

		// The word classes' guards hold whatever the body says: a 5xx is
		// reclassified by a code or type only, a 401 or 408 never, a 429
		// only to QUOTA; a class and a dialect entry never both decide.
		by := fl.RecognisedBy
		switch {
		case by != "" && fl.Dialect != "":
			t.Fatalf("recognised by %q and dialect %q", by, fl.Dialect)
		case fl.Status >= 500 && (strings.HasPrefix(by, "words:") || strings.HasPrefix(by, "upstream:")):
			t.Fatalf("a %d reclassified by its message: %q", fl.Status, by)
		case (fl.Status == 401 || fl.Status == 408) && by != "":
			t.Fatalf("a %d reclassified: %q", fl.Status, by)
		case fl.Status == 429 && by != "" && fl.Code != recovery.Quota:
			t.Fatalf("a 429 reclassified as %s by %q", fl.Code, by)
		case by != "" && fl.Code == recovery.Unknown:
			t.Fatalf("recognised by %q as UNKNOWN", by)
		}
	})
}

// firstError runs one attempt and returns how it failed, or nil when it
// finished.
func firstError(t *testing.T, p llm.Provider) error {
	t.Helper()
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		return err
	}
	defer s.Close()
	for range 1 << 20 {
		if _, err := s.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
	t.Fatal("the stream never ended")
	return nil
}
