package demo

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/inspect"
	"github.com/rebound-agent/rebound/session"
)

// statsOfBefore is analyse as it was before it was split into named steps,
// from its timeline and conversation on (the two reads before are
// unchanged), kept while the refactor is checked against it.
func statsOfBefore(tl *inspect.Timeline, msgs []session.Message) *logStats {
	s := &logStats{faults: map[string]int{}, committed: map[string]string{}, committedThought: map[string]string{},
		toolCalls: map[string]int{}, permissionByWhat: map[string]int{},
		attempts: tl.Totals.Attempts, waited: time.Duration(tl.Totals.WaitedMs) * time.Millisecond}
	for _, m := range msgs {
		if m.Role == session.RoleAssistant {
			s.committed[m.MessageID] = m.Text
			s.committedThought[m.MessageID] = m.Reasoning
		}
	}
	streamed, heldCommitted := 0, 0
	for _, t := range tl.Turns {
		// carried is what attempts that committed nothing showed: the
		// reply the next committed message goes on with.
		carried := 0
		for _, st := range t.Steps {
			switch {
			case st.Outcome == session.OutcomeFailed && !st.Unclosed:
				code := "UNKNOWN"
				if st.Failure != nil && st.Failure.Code != "" {
					code = st.Failure.Code
				}
				s.fault(code)
			case st.Outcome == session.OutcomeTruncated:
				s.fault("truncated")
			}
			streamed += st.StreamedChars
			if st.MessageID == "" {
				carried += st.ShownChars
			} else {
				n := st.ReplyChars + st.ReasoningChars
				switch {
				case carried == 0 && st.ShownChars == 0:
					heldCommitted += n // held: shown once committed
				case st.Incomplete:
					s.incomplete += n
				default:
					s.continued += carried
				}
				carried = 0
			}
			for _, tc := range st.Tools {
				if !dispatched(tc) {
					continue
				}
				if s.toolCalls[tc.Name] == 0 {
					s.toolOrder = append(s.toolOrder, tc.Name)
				}
				s.toolCalls[tc.Name]++
				if tc.Status == session.ToolAborted {
					s.unfinished++
				}
				if tc.Permission != "" {
					if s.permissionByWhat[tc.Permission] == 0 {
						s.permissionOrder = append(s.permissionOrder, tc.Permission)
					}
					s.permissionByWhat[tc.Permission]++
					s.permissions++
				}
			}
		}
	}
	s.heldBack = max(streamed-heldCommitted, 0)
	return s
}

// statsOf counts generated timelines as analyse did before its refactor:
// steps failed (closed or not, with or without a code), truncated, ok,
// with and without a message, shown, streamed or held, incomplete, and
// tools dispatched or not, aborted, with permission answers.
func TestStatsOf_SameAsBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 9))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	for range 20000 {
		tl := &inspect.Timeline{}
		tl.Totals.Attempts, tl.Totals.WaitedMs = r.IntN(9), int64(r.IntN(5000))
		msgs := []session.Message{{Role: session.RoleAssistant, MessageID: "m1", Text: "t", Reasoning: "r"}, {Role: session.RoleUser, MessageID: "u"}}
		for range r.IntN(4) {
			turn := &inspect.Turn{}
			for range r.IntN(5) {
				st := &inspect.Step{Outcome: pick(session.OutcomeFailed, session.OutcomeTruncated, "ok"), Unclosed: r.IntN(4) == 0,
					StreamedChars: r.IntN(50), ShownChars: r.IntN(3) * r.IntN(30), Incomplete: r.IntN(4) == 0,
					ReplyChars: r.IntN(40), ReasoningChars: r.IntN(10), MessageID: pick("", "", "m1", "m2")}
				if r.IntN(2) == 0 {
					st.Failure = &inspect.Failure{Code: pick("", "SERVER", "RATE_LIMIT")}
				}
				for range r.IntN(3) {
					st.Tools = append(st.Tools, inspect.Tool{Name: pick("read_file", "run_command"), Title: pick("", "t"),
						Status: pick("", session.ToolAborted, "completed"), Permission: pick("", "", "allow_once", "reject_once")})
				}
				turn.Steps = append(turn.Steps, st)
			}
			tl.Turns = append(tl.Turns, turn)
		}
		if got, want := statsOf(tl, msgs), statsOfBefore(tl, msgs); !reflect.DeepEqual(got, want) {
			t.Fatalf("statsOf = %+v; before %+v", got, want)
		}
	}
}

