package demo

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// The summary's facts, read from session logs through their timeline:
// the built-in demo's, played live and held before the demo read the
// timeline (the counts are those its own reading of the events gave), and
// session logs of golden transcripts that reach the other rows.
func TestAnalyse(t *testing.T) {
	type facts struct {
		Faults, Tools, Permissions      string
		Attempts                        int
		Waited                          time.Duration
		Continued, Incomplete, HeldBack int
	}
	for _, c := range []struct {
		log  string
		want facts
	}{
		{"demo_live.jsonl", facts{Faults: "RATE_LIMIT ×2, TRANSPORT ×2, TIMEOUT ×1, OVERLOADED ×2, truncated ×2", Tools: "1 (read_file ×1)",
			Attempts: 16, Waited: 756 * time.Millisecond, Continued: 224}},
		{"demo_held.jsonl", facts{Faults: "RATE_LIMIT ×2, TRANSPORT ×2, TIMEOUT ×1, OVERLOADED ×2, truncated ×2", Tools: "1 (read_file ×1)",
			Attempts: 16, Waited: 755 * time.Millisecond, HeldBack: 212}},
		{"live_exhausted_after_text.jsonl", facts{Faults: "TRANSPORT ×1, SERVER ×2", Tools: "0", Attempts: 4, Waited: 1500 * time.Millisecond, Incomplete: 16}},
		{"tool_cancel_permission.jsonl", facts{Faults: "none", Tools: "1 (run_command ×1), 1 not run to the end", Permissions: "cancelled ×1", Attempts: 2}},
		{"truncated_continued.jsonl", facts{Faults: "truncated ×3", Tools: "0", Attempts: 5, HeldBack: 28}},
		{"stall_idle_timeout.jsonl", facts{Faults: "TIMEOUT ×1", Tools: "0", Attempts: 2, Waited: 500 * time.Millisecond, HeldBack: 19}},
	} {
		t.Run(c.log, func(t *testing.T) {
			ld, err := session.Load(filepath.Join("testdata", c.log))
			if err != nil {
				t.Fatal(err)
			}
			st, err := analyse(ld.Events)
			if err != nil {
				t.Fatal(err)
			}
			got := facts{Faults: st.faultList(), Tools: st.toolList(), Permissions: st.permissionList(), Attempts: st.attempts, Waited: st.waited,
				Continued: st.continued, Incomplete: st.incomplete, HeldBack: st.heldBack}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("facts (-want +got):\n%s", diff)
			}
		})
	}
}

// Failures are worded from their code, status and limit alone.
func TestFailureWords(t *testing.T) {
	for _, c := range []struct {
		p    recovery.RetryProgress
		want string
	}{
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.RateLimit, Status: 429, Message: "stream_idle_timeout"}}, "rate limited (429)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Overloaded, Status: 529}}, "overloaded (529)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Server, Status: 503}}, "server error (503)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Transport}}, "connection dropped"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Message: "stream_idle_timeout"}}, "timed out"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Status: 408}}, "timed out (408)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Limit: recovery.LimitIdle}}, "stream stalled (idle timeout)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Limit: recovery.LimitFirstToken}}, "no first token (timeout)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Limit: recovery.LimitAttempt}}, "request too long (attempt timeout)"},
		{recovery.RetryProgress{Failure: &recovery.Failure{Code: "SOMETHING_NEW", Status: 418}}, "request failed (418)"},
		{recovery.RetryProgress{Action: string(recovery.ActionContinue), Failure: &recovery.Failure{Code: recovery.Server}}, "reply cut at the output limit"},
		{recovery.RetryProgress{Action: string(recovery.ActionStripImages)}, "the model does not accept images"},
		{recovery.RetryProgress{}, "the request failed"},
	} {
		if got := failureWords(c.p); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
