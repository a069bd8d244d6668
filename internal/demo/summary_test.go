package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/agent"
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

// A TIMEOUT without an HTTP status is worded by the one limit of the
// agent's that could have ended the attempt, as the session log says when
// the retry is announced: how long the attempt ran, and whether it
// streamed. When none or several could have, or the provider sent 408,
// it reads "timed out".
func TestDriver_Stall(t *testing.T) {
	timeout := &recovery.Failure{Code: recovery.Timeout, Message: "the words are not read"}
	scheduled := agent.RetryProgress{Phase: phaseScheduled, RetryID: "retry_1", Retry: 1, MaxRetries: 2, Failure: timeout}
	exhausted := agent.RetryProgress{Phase: phaseExhausted, RetryID: "retry_1", Retry: 1, MaxRetries: 2, Failure: timeout}
	// The fixtures' failed attempts: stall_idle_timeout's streamed and ran
	// 5s, stall_first_token_timeout's streamed nothing and ran 3s.
	defaults := recovery.Timeouts{FirstToken: 90 * time.Second, Idle: 5 * time.Second}
	for _, c := range []struct {
		name, log      string
		upTo           string // the log as the agent has written it when it tells the editor: up to this line
		p              agent.RetryProgress
		limits         recovery.Timeouts
		attemptTimeout time.Duration
		want           string
	}{
		{"stalled", "stall_idle_timeout.jsonl", `"type":"llm/retry"`, scheduled, defaults, 0, "stream stalled (idle timeout)"},
		{"gave up, stalled", "stall_idle_timeout.jsonl", `"type":"step/end"`, exhausted, defaults, 0, "stream stalled (idle timeout)"},
		{"no first token", "stall_first_token_timeout.jsonl", `"type":"llm/retry"`, scheduled,
			recovery.Timeouts{FirstToken: 3 * time.Second, Idle: 5 * time.Second}, 0, "no first token (timeout)"},
		// Live, a retry that only repeated the text shown before it stalled
		// logs no text; too soon for the first token's limit, it stalled.
		{"stalled, nothing new", "stall_first_token_timeout.jsonl", `"type":"llm/retry"`, scheduled,
			recovery.Timeouts{FirstToken: 90 * time.Second, Idle: time.Second}, 0, "stream stalled (idle timeout)"},
		{"either", "stall_first_token_timeout.jsonl", `"type":"llm/retry"`, scheduled,
			recovery.Timeouts{FirstToken: time.Second, Idle: 2 * time.Second}, 0, "timed out"},
		{"attempt_timeout too", "stall_idle_timeout.jsonl", `"type":"llm/retry"`, scheduled, defaults, time.Second, "timed out"},
		{"none", "stall_idle_timeout.jsonl", `"type":"llm/retry"`, scheduled, recovery.Timeouts{FirstToken: time.Minute, Idle: time.Minute}, 0, "timed out"},
		{"408", "stall_idle_timeout.jsonl", `"type":"llm/retry"`,
			agent.RetryProgress{Phase: phaseScheduled, RetryID: "retry_1", Retry: 1, Failure: &recovery.Failure{Code: recovery.Timeout, Status: 408}}, defaults, 0, "timed out (408)"},
		{"no log", "", "", scheduled, defaults, 0, "timed out"},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			if c.log != "" {
				data, err := os.ReadFile(filepath.Join("testdata", c.log))
				if err != nil {
					t.Fatal(err)
				}
				i := bytes.Index(data, []byte(c.upTo))
				if i < 0 {
					t.Fatalf("%s has no %s", c.log, c.upTo)
				}
				data = data[:i+bytes.IndexByte(data[i:], '\n')+1]
				if err := os.MkdirAll(filepath.Join(state, "sessions"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(session.Path(state, "sess_1"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d := &driver{state: state, sessionID: "sess_1", limits: c.limits, attemptTimeout: c.attemptTimeout}
			if got := failureWords(c.p, d.stall(c.p)); got != c.want {
				t.Errorf("words %q, want %q", got, c.want)
			}
		})
	}
}

// Failures are worded from their code and status alone.
func TestFailureWords(t *testing.T) {
	for _, c := range []struct {
		p    agent.RetryProgress
		want string
	}{
		{agent.RetryProgress{Failure: &recovery.Failure{Code: recovery.RateLimit, Status: 429, Message: "stream_idle_timeout"}}, "rate limited (429)"},
		{agent.RetryProgress{Failure: &recovery.Failure{Code: recovery.Overloaded, Status: 529}}, "overloaded (529)"},
		{agent.RetryProgress{Failure: &recovery.Failure{Code: recovery.Server, Status: 503}}, "server error (503)"},
		{agent.RetryProgress{Failure: &recovery.Failure{Code: recovery.Transport}}, "connection dropped"},
		{agent.RetryProgress{Failure: &recovery.Failure{Code: recovery.Timeout, Message: "stream_idle_timeout"}}, "timed out"},
		{agent.RetryProgress{Failure: &recovery.Failure{Code: "SOMETHING_NEW", Status: 418}}, "request failed (418)"},
		{agent.RetryProgress{Action: actionContinue, Failure: &recovery.Failure{Code: recovery.Server}}, "reply cut at the output limit"},
		{agent.RetryProgress{Action: string(recovery.ActionStripImages)}, "the model does not accept images"},
		{agent.RetryProgress{}, "the request failed"},
	} {
		if got := failureWords(c.p, stallUnknown); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}
