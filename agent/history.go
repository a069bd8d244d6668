package agent

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// toLLM renders the committed conversation as the model gets it. Strict
// providers (DeepSeek's reasoner, say) refuse two user messages in a row and
// a tool call without its result, and a turn that failed, was cancelled or
// was cut short leaves exactly that behind; so every finished turn that did
// not end with a plain assistant reply is closed with a short assistant note
// saying what happened, which also tells the model why the user may be
// asking again. A slash command Rebound answered itself (/status, say) is
// the user's and Rebound's alone: the model never sees it (its compaction,
// for /compact, it does).
func toLLM(msgs []session.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	outcome, inTurn, local := "", false, false
	closeTurn := func() {
		if inTurn {
			out = closeTurnMessages(out, outcome)
		}
		inTurn = false
	}
	for _, m := range msgs {
		switch m.Role {
		case session.RoleCompaction:
			if m.Failed != "" {
				continue // it replaced nothing
			}
			// From here on the summary stands for the oldest messages.
			n := min(max(m.Replaced, 0), len(out))
			out = append([]llm.Message{summaryMessage(m.Text)}, out[n:]...)
		case session.RoleUser:
			closeTurn()
			if local = answeredLocally(m); local {
				continue
			}
			out = append(out, llm.Message{Role: llm.RoleUser, Content: m.Text})
			outcome, inTurn = m.TurnOutcome, m.TurnOutcome != ""
		case session.RoleAssistant:
			if !local {
				out = append(out, assistantMessage(m, outcome))
			}
		case session.RoleTool:
			if !local {
				out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: cmp.Or(m.ProviderCallID, m.ToolCallID), Content: m.Text})
			}
		}
	}
	closeTurn()
	return out
}

// answeredLocally reports whether m, a turn's user message, is a slash
// command Rebound answered itself, as its turn/start recorded when the
// turn began (Prompt writes it on every turn): the fact is read, never
// judged again from the prompt's text, which a later change of how
// commands are recognised, or a prompt that renders like one (a blank
// first block, then "/status"), would judge differently from the turn.
//
// A log written before the fact was recorded has none: there the turn was
// answered locally exactly when its recorded blocks were a command by the
// rule of that time (legacyLocal), which is the decision that version made
// on the same blocks. A command that runs a turn (/retry, /init,
// /continue) records the prompt it runs instead, which is none.
func answeredLocally(m session.Message) bool {
	if m.Local != nil {
		return *m.Local
	}
	return legacyLocal(m)
}

// legacyLocal is how a turn/start without Local was answered: the rule
// Rebound applied before it recorded the fact, a known command on the first
// line of a text first block, applied to the blocks the turn recorded (the
// text only when they do not decode). Frozen: it describes old logs, not
// how commands are recognised now (slashCommand).
func legacyLocal(m session.Message) bool {
	var blocks []acp.ContentBlock
	if err := json.Unmarshal(m.Prompt, &blocks); err != nil || len(blocks) == 0 {
		blocks = []acp.ContentBlock{acp.TextBlock(m.Text)}
	}
	if blocks[0].Type != "text" {
		return false
	}
	_, _, ok := commandLine(blocks[0].Text)
	return ok
}

// assistantMessage renders a committed reply of a turn that ended with
// outcome ("" while it runs).
func assistantMessage(m session.Message, outcome string) llm.Message {
	am := llm.Message{Role: llm.RoleAssistant, Content: m.Text, Reasoning: m.Reasoning}
	if m.Incomplete {
		// What the user saw of a reply that never finished: the model is
		// told where and why it stops.
		am.Content = incompleteContent(m.Text, outcome)
	}
	for _, tc := range m.ToolCalls {
		am.ToolCalls = append(am.ToolCalls, llm.ToolCall{ID: tc.ModelID(), Name: tc.Name, Arguments: tc.Arguments})
	}
	return am
}

func incompleteContent(text, outcome string) string {
	return strings.TrimRight(text, " ") + "\n\n" + turnEndNote(outcome)
}

// history is what a session keeps derived from its events, so that a
// prompt never goes over the whole log: the committed conversation (with
// the checker's state, the retry chain and the next turn's number) and its
// rendering for the model. After every add, conv holds
// session.Conversation of the events added and model() equals toLLM of
// that; TestHistory_MatchesDerivation holds it to this.
type history struct {
	conv *session.History
	seen int // conv's messages rendered into out
	// out is toLLM of them after a slot for the system prompt, so a turn
	// takes the system prompt and history as one slice without copying
	// it (withSystem).
	out []llm.Message
	// The open turn: the index of its user message in conv's messages
	// (-1 if none), and its incomplete replies, whose note says how the
	// turn ended once it has.
	user       int
	incomplete []incompleteReply
	// local: the open turn is a slash command Rebound answered itself,
	// which the model never sees (toLLM).
	local bool
	// fill is the last known context usage (autocompact.go).
	fill session.UsageFill
}

type incompleteReply struct {
	at   int // index in out
	text string
}

func newHistory() *history {
	return &history{conv: session.NewHistory(), user: -1, out: []llm.Message{{Role: llm.RoleSystem}}}
}

// grow makes room for what events will add (session.History.Grow).
func (h *history) grow(events []session.Event) {
	h.out = slices.Grow(h.out, h.conv.Grow(events))
}

// add derives what ev adds (data as for session.History.Add). A refused
// event leaves h as it was.
func (h *history) add(ev session.Event, data any) error {
	if err := h.conv.Add(ev, data); err != nil {
		return err
	}
	h.fill.Add(ev, data)
	msgs := h.conv.Messages()
	for ; h.seen < len(msgs); h.seen++ {
		h.render(&msgs[h.seen])
	}
	if ev.Type == session.TypeTurnEnd && h.user >= 0 {
		// toLLM closes a turn when the next one starts or the history
		// ends; nothing comes between a turn/end and the next turn/start,
		// so closing it now is the same.
		h.closeTurn(msgs[h.user].TurnOutcome)
	}
	return nil
}

// render adds m, conv's message h.seen, to out as toLLM renders it.
func (h *history) render(m *session.Message) {
	switch m.Role {
	case session.RoleCompaction:
		if m.Failed == "" { // a failed one replaced nothing
			h.compacted(m)
		}
	case session.RoleUser:
		if h.local = answeredLocally(*m); h.local {
			h.user, h.incomplete = -1, nil
			return
		}
		h.out = append(h.out, llm.Message{Role: llm.RoleUser, Content: m.Text})
		h.user, h.incomplete = h.seen, nil
	case session.RoleAssistant:
		if h.local {
			return
		}
		if m.Incomplete {
			h.incomplete = append(h.incomplete, incompleteReply{at: len(h.out), text: m.Text})
		}
		h.out = append(h.out, assistantMessage(*m, ""))
	case session.RoleTool:
		if !h.local {
			h.out = append(h.out, llm.Message{Role: llm.RoleTool, ToolCallID: cmp.Or(m.ProviderCallID, m.ToolCallID), Content: m.Text})
		}
	}
}

// compacted replaces in out the messages the compaction m replaced with
// its summary, and moves the open turn's incomplete replies with them.
//
// The cut is where m's Replaced puts it, even right before a tool result
// whose call it replaced (compactions before e89f27c made such cuts, and a
// version that rendered a different number of messages may too): every
// compaction record counts the messages of this history as its writer had
// it, so a message dropped here would move every later record's cut.
// sendable (request.go) leaves such a result out of the request.
func (h *history) compacted(m *session.Message) {
	// A new array: a turn may hold the old one (withSystem).
	n := min(max(m.Replaced, 0), len(h.out)-1)
	h.out = append([]llm.Message{h.out[0], summaryMessage(m.Text)}, h.out[1+n:]...)
	kept := h.incomplete[:0]
	for _, r := range h.incomplete {
		if r.at >= 1+n {
			r.at += 1 - n
			kept = append(kept, r)
		}
	}
	h.incomplete = kept
}

// closeTurn closes the open turn, which ended with outcome: its incomplete
// replies say how, and so does a note when no plain reply ends it.
func (h *history) closeTurn(outcome string) {
	for _, r := range h.incomplete {
		h.out[r.at].Content = incompleteContent(r.text, outcome)
	}
	if outcome != "" {
		h.out = closeTurnMessages(h.out, outcome)
	}
	h.user, h.incomplete = -1, nil
}

// model is the conversation as the model gets it (toLLM). The slice is
// h's: add may change its open turn's messages.
func (h *history) model() []llm.Message { return h.out[1:len(h.out):len(h.out)] }

// withSystem is system followed by the conversation as the model gets it,
// for a turn about to start: the slice is h's, and it stays valid for the
// turn, since add only appends after it (the slice is clipped), changes
// messages of the turn that starts after it, or makes a new array (a
// compaction). Its first element is the turn's to change.
func (h *history) withSystem(system llm.Message) []llm.Message {
	h.out[0] = system
	return h.out[:len(h.out):len(h.out)]
}

// Notes that close a turn that has no plain assistant reply at its end.
var turnEndNotes = map[string]string{
	"cancelled":                    "(The user cancelled this turn before it finished.)",
	session.OutcomeTurnFailed:      "(This turn failed here: the model provider could not complete the request.)",
	session.OutcomeTurnInterrupted: "(This turn was interrupted: the agent stopped before it finished.)",
	"max_turn_requests":            "(This turn stopped at the limit of model requests per turn before it finished.)",
	"max_tokens":                   "(This turn stopped at the output limit before it finished.)",
}

const defaultTurnEndNote = "(This turn ended without a reply.)"

// closeTurnMessages answers every tool call left without a result (a log
// repaired after a crash has them all, this is the last line of defence) and
// adds the note when the turn did not end with a plain assistant reply.
func closeTurnMessages(out []llm.Message, outcome string) []llm.Message {
	out = answerToolCalls(out)
	if last := out[len(out)-1]; last.Role == llm.RoleAssistant && len(last.ToolCalls) == 0 {
		return out
	}
	return append(out, llm.Message{Role: llm.RoleAssistant, Content: turnEndNote(outcome)})
}

func turnEndNote(outcome string) string {
	if note, ok := turnEndNotes[outcome]; ok {
		return note
	}
	return defaultTurnEndNote
}

// answerToolCalls adds a result for every call of the last assistant message
// with tool calls that has none.
func answerToolCalls(out []llm.Message) []llm.Message {
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].Role == llm.RoleUser {
			return out
		}
		if out[i].Role != llm.RoleAssistant || len(out[i].ToolCalls) == 0 {
			continue
		}
		answered := map[string]bool{}
		for _, m := range out[i+1:] {
			if m.Role == llm.RoleTool {
				answered[m.ToolCallID] = true
			}
		}
		for _, tc := range out[i].ToolCalls {
			if !answered[tc.ID] {
				out = append(out, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: notRunOutput})
			}
		}
		return out
	}
	return out
}

// notRunOutput is the result of a tool call that never ran.
const notRunOutput = "This tool call was not run: the turn ended before it (cancelled or interrupted)."

// alternate makes a request valid for strict providers whatever compaction
// cut: consecutive user messages (a summary followed by a kept prompt) are
// merged, and so are consecutive plain assistant messages.
func alternate(msgs []llm.Message) []llm.Message {
	first := 1
	for first < len(msgs) && !mergeable(msgs[first-1], msgs[first]) {
		first++
	}
	if first >= len(msgs) {
		// Nothing to merge, as in most requests: sent as it is, not copied
		// (a request's slice is its own).
		return msgs
	}
	out := append(make([]llm.Message, 0, len(msgs)), msgs[:first]...)
	for _, m := range msgs[first:] {
		prev := &out[len(out)-1]
		if mergeable(*prev, m) {
			prev.Content = strings.TrimRight(prev.Content, "\n") + "\n\n" + m.Content
			prev.Images = append(prev.Images[:len(prev.Images):len(prev.Images)], m.Images...)
			prev.ToolCalls = m.ToolCalls
			continue
		}
		out = append(out, m)
	}
	return out
}

func mergeable(prev, m llm.Message) bool {
	return prev.Role == m.Role && (m.Role == llm.RoleUser ||
		(m.Role == llm.RoleAssistant && len(prev.ToolCalls) == 0 && len(m.ToolCalls) == 0))
}
