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
	"time"

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
