package inspect

import "testing"

func TestInspect_Dur(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{0, "0.000s"}, {500, "0.500s"}, {59999, "59.999s"}, {60000, "1m00.000s"},
		{125300, "2m05.300s"}, {3723000, "1h02m03s"}, {-1500, "-1.500s"},
	} {
		if got := dur(c.ms); got != c.want {
			t.Errorf("dur(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
}

func TestInspect_TickStep(t *testing.T) {
	for _, c := range []struct{ span, want int64 }{
		{0, 1}, {1, 1}, {10, 1}, {11, 2}, {1000, 100}, {1500, 200}, {8000, 1000}, {30000, 5000}, {100000, 10000}, {110000, 15000},
		{3600000, 600000}, {5 * 86400000, 43200000}, {30 * 86400000, 4 * 86400000},
	} {
		if got := tickStep(c.span); got != c.want || c.span/got > 10 {
			t.Errorf("tickStep(%d) = %d, want %d", c.span, got, c.want)
		}
	}
}

func TestInspect_TickLabel(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want string
	}{
		{0, "0s"}, {500, "500ms"}, {1500, "1.5s"}, {60000, "1m"}, {90000, "1m30s"}, {3600000, "1h"}, {5400000, "1h30m"},
	} {
		if got := tickLabel(c.ms); got != c.want {
			t.Errorf("tickLabel(%d) = %q, want %q", c.ms, got, c.want)
		}
	}
}

// An attempt's note says how its failure was recognised when more than the
// status said it: the word class, or the dialect entry.
func TestInspect_NotesSayHowRecognised(t *testing.T) {
	tests := []struct {
		f    Failure
		want string
	}{
		{Failure{Code: "CONTEXT_OVERFLOW", Message: "too long", Status: 413, RecognisedBy: "code:overflow"}, "too long · recognised by code:overflow"},
		{Failure{Code: "QUOTA", Message: "no money", Status: 429, Dialect: "openai.insufficient_quota"}, "no money · recognised by dialect:openai.insufficient_quota"},
		{Failure{Code: "SERVER", Message: "boom", Status: 500}, "boom"},
	}
	for _, tt := range tests {
		s := &Step{Outcome: "failed", Failure: &tt.f}
		if got := notes(s, "", false); len(got) == 0 || got[0] != tt.want {
			t.Errorf("notes(%+v) = %q, want first %q", tt.f, got, tt.want)
		}
	}
}
