package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/session"
)

// demoLogStats is what the session log says happened.
type demoLogStats struct {
	// faults counts failed steps by failure code, and truncated steps as
	// "truncated", in the order first met.
	faults     map[string]int
	faultOrder []string
	attempts   int           // step/start events: provider attempts
	waited     time.Duration // llm/retry → llm/retry-started (or the turn's end)
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
	// attempts streamed, which were never shown: the chunks not shown and
	// not part of a committed message.
	heldBack int
	// toolCalls counts tool/call events (a call is logged once, before it
	// runs) by tool name, in the order first met; unfinished counts those
	// whose result says they did not run to the end (cancelled).
	toolCalls  map[string]int
	toolOrder  []string
	unfinished int
	// permissions counts permission events by outcome, in the order first
	// met.
	permissions      int
	permissionOrder  []string
	permissionByWhat map[string]int
}

// demoDiscarded counts the characters of shown that committed does not
// hold: everything after their longest common prefix.
func demoDiscarded(shown, committed string) int {
	i := 0
	for i < len(shown) && i < len(committed) && shown[i] == committed[i] {
		i++
	}
	for i > 0 && i < len(shown) && !utf8.RuneStart(shown[i]) {
		i--
	}
	return utf8.RuneCountInString(shown[i:])
}

func (s *demoLogStats) faultTotal() int {
	n := 0
	for _, c := range s.faults {
		n += c
	}
	return n
}

func (s *demoLogStats) toolTotal() int {
	n := 0
	for _, c := range s.toolCalls {
		n += c
	}
	return n
}

// toolList is the "tool calls run" row: "1 (read_file ×1)", "0".
func (s *demoLogStats) toolList() string {
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
func (s *demoLogStats) permissionList() string {
	parts := make([]string, len(s.permissionOrder))
	for i, o := range s.permissionOrder {
		parts[i] = fmt.Sprintf("%s ×%d", o, s.permissionByWhat[o])
	}
	return strings.Join(parts, ", ")
}

func (s *demoLogStats) faultList() string {
	if len(s.faultOrder) == 0 {
		return "none"
	}
	parts := make([]string, len(s.faultOrder))
	for i, code := range s.faultOrder {
		parts[i] = fmt.Sprintf("%s ×%d", code, s.faults[code])
	}
	return strings.Join(parts, ", ")
}

// demoAnalyse reads the facts of the summary from a session log's events.
func demoAnalyse(events []session.Event) (*demoLogStats, error) {
	s := &demoLogStats{faults: map[string]int{}, committed: map[string]string{}, committedThought: map[string]string{}, toolCalls: map[string]int{}, permissionByWhat: map[string]int{}}
	// Live mode's shown chunks, by messageId: characters by step.
	type shownRun struct{ step, chars int }
	shownBy := map[string][]shownRun{}
	unshown, heldCommitted := 0, 0
	type waitKey struct {
		id    string
		retry int
	}
	type callKey struct {
		turn int
		id   string
	}
	started := map[callKey]bool{} // tool/call events: the calls that began
	pending := map[waitKey]struct {
		turn int
		at   time.Time
	}{}
	fault := func(code string) {
		if s.faults[code] == 0 {
			s.faultOrder = append(s.faultOrder, code)
		}
		s.faults[code]++
	}
	for _, ev := range events {
		var err error
		switch ev.Type {
		case session.TypeStepStart:
			s.attempts++
		case session.TypeAssistantChunk:
			var c session.AssistantChunk
			if err = json.Unmarshal(ev.Data, &c); err == nil {
				n := utf8.RuneCountInString(c.Text) + utf8.RuneCountInString(c.Reasoning)
				if c.Shown {
					shownBy[c.MessageID] = append(shownBy[c.MessageID], shownRun{c.Step, n})
				} else {
					unshown += n
				}
			}
		case session.TypeAssistantMessage:
			var m session.AssistantMessage
			if err = json.Unmarshal(ev.Data, &m); err == nil {
				n := utf8.RuneCountInString(m.Text) + utf8.RuneCountInString(m.Reasoning)
				s.committed[m.MessageID] = m.Text
				s.committedThought[m.MessageID] = m.Reasoning
				switch runs := shownBy[m.MessageID]; {
				case len(runs) == 0:
					heldCommitted += n
				case m.Incomplete:
					s.incomplete += n
				default:
					for _, r := range runs {
						if r.step < m.Step {
							s.continued += r.chars
						}
					}
				}
			}
		case session.TypeStepEnd:
			var e session.StepEnd
			if err = json.Unmarshal(ev.Data, &e); err == nil {
				switch e.Outcome {
				case session.OutcomeFailed:
					var f struct {
						Code string `json:"code"`
					}
					_ = json.Unmarshal(e.Failure, &f)
					if f.Code == "" {
						f.Code = "UNKNOWN"
					}
					fault(f.Code)
				case session.OutcomeTruncated:
					fault("truncated")
				}
			}
		case session.TypeToolCall:
			var c session.ToolCall
			if err = json.Unmarshal(ev.Data, &c); err == nil {
				if s.toolCalls[c.Name] == 0 {
					s.toolOrder = append(s.toolOrder, c.Name)
				}
				s.toolCalls[c.Name]++
				started[callKey{c.Turn, c.ToolCallID}] = true
			}
		case session.TypeToolResult:
			var r session.ToolResult
			if err = json.Unmarshal(ev.Data, &r); err == nil && r.Status == session.ToolAborted && started[callKey{r.Turn, r.ToolCallID}] {
				s.unfinished++
			}
		case session.TypePermission:
			var p session.Permission
			if err = json.Unmarshal(ev.Data, &p); err == nil {
				if s.permissionByWhat[p.Outcome] == 0 {
					s.permissionOrder = append(s.permissionOrder, p.Outcome)
				}
				s.permissionByWhat[p.Outcome]++
				s.permissions++
			}
		case session.TypeLLMRetry:
			var r session.LLMRetry
			if err = json.Unmarshal(ev.Data, &r); err == nil {
				pending[waitKey{r.RetryID, r.Retry}] = struct {
					turn int
					at   time.Time
				}{r.Turn, ev.Time}
			}
		case session.TypeLLMRetryStarted:
			var r session.LLMRetryStarted
			if err = json.Unmarshal(ev.Data, &r); err == nil {
				k := waitKey{r.RetryID, r.Retry}
				if p, ok := pending[k]; ok {
					s.waited += ev.Time.Sub(p.at)
					delete(pending, k)
				}
			}
		case session.TypeTurnEnd:
			// A wait that never started was cut short by the turn's end
			// (a cancel): it counts until then.
			var t session.TurnEnd
			if err = json.Unmarshal(ev.Data, &t); err == nil {
				for k, p := range pending {
					if p.turn == t.Turn {
						s.waited += ev.Time.Sub(p.at)
						delete(pending, k)
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("event %d (%s): %w", ev.Seq, ev.Type, err)
		}
	}
	s.heldBack = max(unshown-heldCommitted, 0)
	return s, nil
}
