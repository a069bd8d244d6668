package demo

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/inspect"
	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/session"
)

// logStats is what the session log says happened, as the summary counts
// it.
type logStats struct {
	// faults counts failed attempts by failure code, and truncated ones as
	// "truncated", in the order met.
	faults     map[string]int
	faultOrder []string
	attempts   int           // provider attempts (steps)
	waited     time.Duration // the retry waits, as the timeline measures them
	// committed and committedThought are the committed messages' text and
	// reasoning, by messageId: what the editor was shown of a message must
	// all be there.
	committed, committedThought map[string]string
	// Live mode: continued counts the characters shown by the attempts
	// before the one that finished a message (a drop, a stall, a cut at the
	// output limit), which the next attempt went on from instead of showing
	// them again; incomplete the characters of replies committed as shown
	// when their recovery failed or was cancelled.
	continued, incomplete int
	// Held mode: heldBack counts the characters failed or discarded
	// attempts streamed, which were never shown: the characters streamed
	// unshown that are not part of a committed message.
	heldBack int
	// toolCalls counts the tool calls run (dispatched: logged before they
	// run) by tool name, in the order met; unfinished counts those that
	// did not run to the end (aborted).
	toolCalls  map[string]int
	toolOrder  []string
	unfinished int
	// permissions counts the permission answers by outcome, in the order
	// met.
	permissions      int
	permissionOrder  []string
	permissionByWhat map[string]int
}

// analyse reads the facts of the summary from a session log's events: the
// attempts, faults, waits, tool calls and characters from its timeline
// (inspect.Build), the committed replies from its conversation.
func analyse(events []session.Event) (*logStats, error) {
	tl, err := inspect.Build(events)
	if err != nil {
		return nil, err
	}
	msgs, err := session.Conversation(events)
	if err != nil {
		return nil, err
	}
	return statsOf(tl, msgs), nil
}

// statsOf counts the summary's facts in a timeline and the conversation
// of the same log.
func statsOf(tl *inspect.Timeline, msgs []session.Message) *logStats {
	s := &logStats{faults: map[string]int{}, committed: map[string]string{}, committedThought: map[string]string{},
		toolCalls: map[string]int{}, permissionByWhat: map[string]int{},
		attempts: tl.Totals.Attempts, waited: time.Duration(tl.Totals.WaitedMs) * time.Millisecond}
	for _, m := range msgs {
		if m.Role == session.RoleAssistant {
			s.committed[m.MessageID] = m.Text
			s.committedThought[m.MessageID] = m.Reasoning
		}
	}
	var c charTally
	for _, t := range tl.Turns {
		c.carried = 0 // a turn's first message goes on with nothing
		for _, st := range t.Steps {
			s.stepFault(st)
			c.step(s, st)
			for _, tc := range st.Tools {
				s.tool(tc)
			}
		}
	}
	s.heldBack = max(c.streamed-c.heldCommitted, 0)
	return s
}

// charTally counts the characters of a log's attempts, step by step.
type charTally struct {
	streamed      int // streamed by every attempt
	heldCommitted int // of messages shown only once committed (held)
	// carried is what attempts that committed nothing showed: the reply
	// the next committed message goes on with.
	carried int
}

// step counts the characters of attempt st into c and, for the message
// it commits, into s's continued or incomplete.
func (c *charTally) step(s *logStats, st *inspect.Step) {
	c.streamed += st.StreamedChars
	if st.MessageID == "" {
		c.carried += st.ShownChars
		return
	}
	n := st.ReplyChars + st.ReasoningChars
	switch {
	case c.carried == 0 && st.ShownChars == 0:
		c.heldCommitted += n // held: shown once committed
	case st.Incomplete:
		s.incomplete += n
	default:
		s.continued += c.carried
	}
	c.carried = 0
}

// stepFault counts attempt st's failure, or its cut at the output limit.
func (s *logStats) stepFault(st *inspect.Step) {
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
}

// tool counts tool call tc, when it was dispatched, and its permission
// answer.
func (s *logStats) tool(tc inspect.Tool) {
	if !dispatched(tc) {
		return
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

// dispatched reports whether a tool call ran, or began to: the agent gives
// every call it dispatches a title, and a call that never ran is aborted.
func dispatched(tc inspect.Tool) bool {
	return tc.Title != "" || (tc.Status != "" && tc.Status != session.ToolAborted)
}

func (s *logStats) fault(code string) {
	if s.faults[code] == 0 {
		s.faultOrder = append(s.faultOrder, code)
	}
	s.faults[code]++
}

// discardedChars counts the characters of shown that committed does not
// hold: everything after their longest common prefix.
func discardedChars(shown, committed string) int {
	i := 0
	for i < len(shown) && i < len(committed) && shown[i] == committed[i] {
		i++
	}
	i = text.Floor(shown, i)
	return utf8.RuneCountInString(shown[i:])
}

func (s *logStats) faultTotal() int {
	n := 0
	for _, c := range s.faults {
		n += c
	}
	return n
}

func (s *logStats) toolTotal() int {
	n := 0
	for _, c := range s.toolCalls {
		n += c
	}
	return n
}

// toolList is the "tool calls run" row: "1 (read_file ×1)", "0".
func (s *logStats) toolList() string {
	n := s.toolTotal()
	if n == 0 {
		return "0"
	}
	parts := make([]string, len(s.toolOrder))
	for i, name := range s.toolOrder {
		parts[i] = fmt.Sprintf("%s ×%d", name, s.toolCalls[name])
	}
	out := fmt.Sprintf("%d (%s)", n, strings.Join(parts, ", "))
	if s.unfinished > 0 {
		out += fmt.Sprintf(", %d not run to the end", s.unfinished)
	}
	return out
}

// permissionList is "allow_once ×1".
func (s *logStats) permissionList() string {
	parts := make([]string, len(s.permissionOrder))
	for i, o := range s.permissionOrder {
		parts[i] = fmt.Sprintf("%s ×%d", o, s.permissionByWhat[o])
	}
	return strings.Join(parts, ", ")
}

func (s *logStats) faultList() string {
	if len(s.faultOrder) == 0 {
		return "none"
	}
	parts := make([]string, len(s.faultOrder))
	for i, code := range s.faultOrder {
		parts[i] = fmt.Sprintf("%s ×%d", code, s.faults[code])
	}
	return strings.Join(parts, ", ")
}
