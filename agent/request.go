package agent

import (
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// request is a turn's count of its logical requests and their attempts, and
// the settings the current logical request is made with. The turn owns one
// and changes it only through these methods, so what a step number or an
// attempt count means is said here once.
type request struct {
	made  int       // logical requests (rounds of the agent loop) made this turn
	start time.Time // when the current logical request began
	first int       // the current logical request's first attempt's number
	// attempts counts the provider requests made this turn, retries
	// included: the log calls an attempt a step (step/start, step/end, and
	// their Step).
	attempts int
	open     bool // the current attempt has a step/start and no step/end
	// continuations asked of the current reply, cut at the output limit.
	continuations int
	settings
}

// settings are what the current request asks of the provider.
type settings struct {
	model     string // the session's, as of the request's start, unless the fallback policy switched it
	fellBack  bool   // the fallback policy switched the model for the rest of the turn
	effort    string // the reasoning effort asked of the model, if any
	mode      string // the session's mode, as of the request's start
	maxTokens int    // the truncation policy may raise it for this turn
}

// apply takes the session's options as the next logical request starts:
// chosen since the last one, they apply from this one, except the model
// once the fallback policy switched it. effort is the reasoning effort a
// request to a model carries for a thought level. modeChanged says whether
// the mode changed (the system prompt says what it allows).
func (r *request) apply(o options, effort func(model, thought string) string) (modeChanged bool) {
	modeChanged = o.mode != r.mode
	r.mode = o.mode
	if !r.fellBack {
		r.model = o.model
	}
	r.effort = effort(r.model, o.thought)
	return modeChanged
}

// fallBack switches the model for the rest of the turn.
func (r *request) fallBack(model, effort string) {
	r.model, r.fellBack, r.effort = model, true, effort
}

// begin starts a logical request at now: its attempts are numbered on
// from the turn's, and it has continued nothing yet.
func (r *request) begin(now time.Time) {
	r.start, r.first, r.continuations = now, r.attempts+1, 0
}

// nextAttempt numbers the next attempt (its step); it is open once its
// step/start is recorded.
func (r *request) nextAttempt() int {
	r.attempts++
	return r.attempts
}

// ofRequest is how many attempts the current logical request has made.
func (r *request) ofRequest() int { return r.attempts - r.first + 1 }

// escalated reports whether this turn already raised the output budget
// above the configured one.
func (r *request) escalated(configured int) bool { return r.maxTokens != configured }

// turnMessages are what a turn sends the model, besides a continuation:
// the system prompt and the session's history, this turn's prompt, and
// its committed replies and tool results so far.
type turnMessages struct {
	history  []llm.Message // system prompt and the session's history, as the model gets it
	prompt   llm.Message   // this turn's user message
	exchange []llm.Message // this turn's committed replies and tool results so far
}

// add appends a committed reply or a tool result to the exchange.
func (m *turnMessages) add(msg llm.Message) { m.exchange = append(m.exchange, msg) }

// build appends the next attempt's messages to buf: the history, the
// prompt, the exchange and, when a reply cut short is being continued
// (prefix is what of it there is), the partial reply and the request to go
// on, or, for a provider that continues a reply in place, the partial
// reply marked as the prefix to continue.
func (m *turnMessages) build(buf []llm.Message, prefix string, inPlace bool) []llm.Message {
	msgs := append(buf, m.history...)
	msgs = append(msgs, m.prompt)
	msgs = append(msgs, m.exchange...)
	if prefix != "" && inPlace {
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: prefix, Prefix: true})
	} else if prefix != "" {
		msgs = append(msgs,
			llm.Message{Role: llm.RoleAssistant, Content: prefix},
			llm.Message{Role: llm.RoleUser, Content: continuePrompt})
	}
	return msgs
}

// stripImages drops the prompt's images, which the prompt text already names
// as [image: …] placeholders, and tells the model why. The log keeps the
// user's original prompt.
func (m *turnMessages) stripImages() error {
	if len(m.prompt.Images) == 0 {
		return ErrNoImages
	}
	m.prompt.Content += "\n(Note: the user attached the images named above, but this model cannot receive images, so only their names are given.)"
	m.prompt.Images = nil
	return nil
}

// sendable makes an attempt's messages, as built, a request strict
// providers take: tool calls paired with their results (pairToolCalls),
// then roles alternating (alternate). It is applied once, to every
// attempt's messages, whatever derived them: the log's history, a
// compaction's cut, the turn's exchange. What it repaired is returned for
// the caller to log: a repair means something upstream let a pair break.
func sendable(msgs []llm.Message) ([]llm.Message, pairRepairs) {
	msgs, fixed := pairToolCalls(msgs)
	return alternate(msgs), fixed
}

// pairRepairs counts what pairToolCalls changed.
type pairRepairs struct {
	dropped  int // tool results that answered no call of the message before them, or answered one twice
	answered int // calls given a result saying none was recorded
}

// pairToolCalls returns msgs with the pairing OpenAI, Anthropic (through
// gateways), Mistral and Bedrock refuse a request without: every tool
// result answers a call of the nearest assistant message before it, each
// call once, and every call of an assistant message is answered before the
// next message that is not a tool result (or the request's end).
//
// A result that answers no such call is dropped. Its call is gone from
// the request (a compaction of a log written before compactions kept
// calls with their results replaced it, and the summary was made without
// the result), so there is nothing to pair it with. It is not sent in
// another role instead: a tool's output (a file, a web page, an MCP
// server's answer) must never reach the model as the user's words. The
// log keeps it, and so does the session's history (toLLM), where every
// compaction record counts its messages; the next compaction summarises
// it. A call without a result gets noResultOutput after its results.
//
// Requests are built for every attempt, and almost all are already well
// formed: they are returned as they are, not copied (a request's slice is
// its own).
func pairToolCalls(msgs []llm.Message) ([]llm.Message, pairRepairs) {
	p := pairing{msgs: msgs}
	for i := 0; i < len(msgs); {
		m := msgs[i]
		if m.Role == llm.RoleTool { // after no call: answerCalls takes every answer
			p.drop(i)
			i++
			continue
		}
		p.keep(m)
		i++
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			i = p.answerCalls(m.ToolCalls, i)
		}
	}
	return p.result()
}

// pairing is pairToolCalls' work: msgs as given, and out, the repaired
// copy, made only at the first change so a well-formed request is not
// copied.
type pairing struct {
	msgs  []llm.Message
	out   []llm.Message // nil until the first change
	fixed pairRepairs
}

// answerCalls pairs calls, the tool calls of the assistant message before
// msgs[i], with the run of tool results from msgs[i]: a result that
// answers none of them still unanswered is dropped, a call left without
// one is given noResultOutput. It returns the index after the run.
func (p *pairing) answerCalls(calls []llm.ToolCall, i int) int {
	var small [16]bool // no allocation for the usual few calls
	answered := small[:min(len(calls), len(small))]
	if len(calls) > len(small) {
		answered = make([]bool, len(calls))
	}
	for ; i < len(p.msgs) && p.msgs[i].Role == llm.RoleTool; i++ {
		k := unansweredCall(calls, answered, p.msgs[i].ToolCallID)
		if k < 0 {
			p.drop(i)
			continue
		}
		answered[k] = true
		p.keep(p.msgs[i])
	}
	for k, tc := range calls {
		if !answered[k] {
			p.add(i, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: noResultOutput})
		}
	}
	return i
}

// keep keeps m, the next message of msgs.
func (p *pairing) keep(m llm.Message) {
	if p.out != nil {
		p.out = append(p.out, m)
	}
}

// drop leaves out msgs[i].
func (p *pairing) drop(i int) {
	p.change(i)
	p.fixed.dropped++
}

// add adds the made-up result m before msgs[i].
func (p *pairing) add(i int, m llm.Message) {
	p.change(i)
	p.out = append(p.out, m)
	p.fixed.answered++
}

// change starts the copy, with msgs before i, at the first change.
func (p *pairing) change(i int) {
	if p.out == nil {
		p.out = append(make([]llm.Message, 0, len(p.msgs)+4), p.msgs[:i]...)
	}
}

func (p *pairing) result() ([]llm.Message, pairRepairs) {
	if p.out == nil {
		return p.msgs, p.fixed
	}
	return p.out, p.fixed
}

// unansweredCall is the index of the first call of calls with id that
// answered does not mark, or -1.
func unansweredCall(calls []llm.ToolCall, answered []bool, id string) int {
	for k, c := range calls {
		if c.ID == id && !answered[k] {
			return k
		}
	}
	return -1
}

// noResultOutput is the result a request gives a call the history has no
// result for. Why is not known here (a log repaired after a crash says
// more, notRunOutput says more), so the model is told what it can rely on.
const noResultOutput = "No result was recorded for this tool call: it may or may not have run. Check before repeating it."
