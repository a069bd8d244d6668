package recovery_test

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/recovery"
)

func TestParseRetryAfter_Values(t *testing.T) {
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	type result struct {
		D   time.Duration
		OK  bool
		Err string
	}
	tests := []struct {
		name   string
		header http.Header
		want   result
	}{
		{"absent", http.Header{}, result{}},
		{"nil header", nil, result{}},
		{"blank", http.Header{"Retry-After": {"  "}}, result{}},
		{"delta seconds", http.Header{"Retry-After": {"1"}}, result{D: time.Second, OK: true}},
		{"zero seconds", http.Header{"Retry-After": {"0"}}, result{D: 0, OK: true}},
		{"two minutes", http.Header{"Retry-After": {"120"}}, result{D: 2 * time.Minute, OK: true}},
		{"surrounding spaces", http.Header{"Retry-After": {" 7 "}}, result{D: 7 * time.Second, OK: true}},
		{"a day", http.Header{"Retry-After": {"86400"}}, result{D: 24 * time.Hour, OK: true}},
		// Issue #10: any wait that is written correctly is reported as
		// asked; whether it is too long is the policy's call.
		{"more than a day", http.Header{"Retry-After": {"90000"}}, result{D: 25 * time.Hour, OK: true}},
		{"a year", http.Header{"Retry-After": {"31536000"}}, result{D: 365 * 24 * time.Hour, OK: true}},
		{"the longest Duration in seconds", http.Header{"Retry-After": {"9223372036"}}, result{D: 9223372036 * time.Second, OK: true}},
		{"one second more saturates", http.Header{"Retry-After": {"9223372037"}}, result{D: math.MaxInt64, OK: true}},
		{"beyond int64 saturates", http.Header{"Retry-After": {"99999999999999999999"}}, result{D: math.MaxInt64, OK: true}},
		{"leading zeros", http.Header{"Retry-After": {"007"}}, result{D: 7 * time.Second, OK: true}},
		{"HTTP date far ahead", http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, result{D: math.MaxInt64, OK: true}},
		{"HTTP date in the future", http.Header{"Retry-After": {"Fri, 14 Mar 2025 12:00:30 GMT"}}, result{D: 30 * time.Second, OK: true}},
		{"HTTP date in the past", http.Header{"Retry-After": {"Fri, 14 Mar 2025 11:59:00 GMT"}}, result{D: 0, OK: true}},
		{"HTTP date now", http.Header{"Retry-After": {"Fri, 14 Mar 2025 12:00:00 GMT"}}, result{D: 0, OK: true}},
		{"RFC 850 date", http.Header{"Retry-After": {"Friday, 14-Mar-25 12:01:00 GMT"}}, result{D: time.Minute, OK: true}},
		{"retry-after-ms", http.Header{"Retry-After-Ms": {"1500"}}, result{D: 1500 * time.Millisecond, OK: true}},
		{"retry-after-ms with a fraction", http.Header{"Retry-After-Ms": {"1500.5"}}, result{D: 1500*time.Millisecond + 500*time.Microsecond, OK: true}},
		{"retry-after-ms zero", http.Header{"Retry-After-Ms": {"0"}}, result{D: 0, OK: true}},
		{"retry-after-ms of more than a day", http.Header{"Retry-After-Ms": {"90000000"}}, result{D: 25 * time.Hour, OK: true}},
		{"retry-after-ms with an exponent", http.Header{"Retry-After-Ms": {"1.5e3"}}, result{D: 1500 * time.Millisecond, OK: true}},
		{"retry-after-ms huge saturates", http.Header{"Retry-After-Ms": {"1e300"}}, result{D: math.MaxInt64, OK: true}},
		{"retry-after-ms beyond float64 saturates", http.Header{"Retry-After-Ms": {"1e400"}}, result{D: math.MaxInt64, OK: true}},
		{"retry-after-ms is preferred", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, result{D: 1500 * time.Millisecond, OK: true}},
		{"an invalid retry-after-ms falls back to Retry-After", http.Header{"Retry-After-Ms": {"fast"}, "Retry-After": {"2"}}, result{D: 2 * time.Second, OK: true}},
		{"words", http.Header{"Retry-After": {"soon"}},
			result{Err: `invalid Retry-After header "soon": neither seconds nor an HTTP date`}},
		{"negative", http.Header{"Retry-After": {"-1"}},
			result{Err: `invalid Retry-After header "-1": neither seconds nor an HTTP date`}},
		{"a sign", http.Header{"Retry-After": {"+5"}},
			result{Err: `invalid Retry-After header "+5": neither seconds nor an HTTP date`}},
		{"digits and words", http.Header{"Retry-After": {"90000 seconds"}},
			result{Err: `invalid Retry-After header "90000 seconds": neither seconds nor an HTTP date`}},
		// Issue #31: providers send fractions; RFC 9110 has none, but a
		// fraction is no less clear.
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, result{D: 1500 * time.Millisecond, OK: true}},
		{"fractional seconds, two places", http.Header{"Retry-After": {"2.73"}}, result{D: 2730 * time.Millisecond, OK: true}},
		{"a fraction below the nanosecond is dropped", http.Header{"Retry-After": {"0.0000000019"}}, result{D: 1, OK: true}},
		{"a fraction on the longest wait saturates", http.Header{"Retry-After": {"9223372036.9"}}, result{D: math.MaxInt64, OK: true}},
		{"x-ms-retry-after-ms (Azure)", http.Header{"X-Ms-Retry-After-Ms": {"2500"}}, result{D: 2500 * time.Millisecond, OK: true}},
		{"retry-after-ms before x-ms-retry-after-ms", http.Header{"Retry-After-Ms": {"10"}, "X-Ms-Retry-After-Ms": {"2500"}}, result{D: 10 * time.Millisecond, OK: true}},
		{"x-ms-retry-after-ms before Retry-After", http.Header{"X-Ms-Retry-After-Ms": {"2500"}, "Retry-After": {"3"}}, result{D: 2500 * time.Millisecond, OK: true}},
		{"a trailing dot", http.Header{"Retry-After": {"1."}},
			result{Err: `invalid Retry-After header "1.": neither seconds nor an HTTP date`}},
		{"a bare fraction", http.Header{"Retry-After": {".5"}},
			result{Err: `invalid Retry-After header ".5": neither seconds nor an HTTP date`}},
		{"two dots", http.Header{"Retry-After": {"1.5.2"}},
			result{Err: `invalid Retry-After header "1.5.2": neither seconds nor an HTTP date`}},
		{"an exponent", http.Header{"Retry-After": {"1e3"}},
			result{Err: `invalid Retry-After header "1e3": neither seconds nor an HTTP date`}},
		{"NaN", http.Header{"Retry-After": {"NaN"}},
			result{Err: `invalid Retry-After header "NaN": neither seconds nor an HTTP date`}},
		{"a negative fraction", http.Header{"Retry-After": {"-0.5"}},
			result{Err: `invalid Retry-After header "-0.5": neither seconds nor an HTTP date`}},
		{"inner space", http.Header{"Retry-After": {"1 5"}},
			result{Err: `invalid Retry-After header "1 5": neither seconds nor an HTTP date`}},
		{"x-ms-retry-after-ms words", http.Header{"X-Ms-Retry-After-Ms": {"soon"}},
			result{Err: `invalid x-ms-retry-after-ms header "soon"`}},
		{"retry-after-ms words", http.Header{"Retry-After-Ms": {"soon"}},
			result{Err: `invalid retry-after-ms header "soon"`}},
		{"retry-after-ms negative", http.Header{"Retry-After-Ms": {"-1"}},
			result{Err: `invalid retry-after-ms header "-1"`}},
		{"retry-after-ms with a sign", http.Header{"Retry-After-Ms": {"+5"}},
			result{Err: `invalid retry-after-ms header "+5"`}},
		{"retry-after-ms hex", http.Header{"Retry-After-Ms": {"0x10"}},
			result{Err: `invalid retry-after-ms header "0x10"`}},
		{"retry-after-ms NaN", http.Header{"Retry-After-Ms": {"NaN"}},
			result{Err: `invalid retry-after-ms header "NaN"`}},
		{"retry-after-ms Inf", http.Header{"Retry-After-Ms": {"+Inf"}},
			result{Err: `invalid retry-after-ms header "+Inf"`}},
		{"both invalid: the Retry-After error is reported", http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"y"}},
			result{Err: `invalid Retry-After header "y": neither seconds nor an HTTP date`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok, err := recovery.ParseRetryAfter(tt.header, now)
			got := result{D: d, OK: ok}
			if err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseRetryAfter(%v) (-want +got):\n%s", tt.header, diff)
			}
			if ok && err != nil {
				t.Errorf("ok with an error: %v", err)
			}
		})
	}
}
