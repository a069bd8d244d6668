package session

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleCompaction marks where a summary replaced older history for the
	// model, or (Failed) where a compaction was tried and replaced nothing.
	RoleCompaction = "compaction"
	// RoleTool is the result of one tool call of the assistant message
	// before it.
	RoleTool = "tool"
)

// Turn outcomes other than a stop reason, as Message.TurnOutcome reports them.
const (
	OutcomeTurnFailed      = "failed"
	OutcomeTurnInterrupted = "interrupted"
)

// Message is one entry of the committed conversation.
type Message struct {
	// Seq is the seq of the event the message comes from: where it stands
	// among other things replayed from the log (WaitStatuses).
	Seq       int64
	Turn      int
	Role      string // RoleUser, RoleAssistant or RoleCompaction
	Text      string
	Reasoning string
	MessageID string
	// Prompt is the user's prompt blocks as the editor sent them (user
	// messages only).
	Prompt json.RawMessage
	// Local (user only) is TurnStart.Local: the prompt was answered by
	// Rebound, never sent to the model; nil in a log written before that
	// was recorded, where the reader decides as the writer did then.
	Local        *bool
	FinishReason string
	// Replaced (compaction only): how many earlier messages of the model's
	// history Text, a summary, stands for from here on.
	Replaced     int
	CompactionID string
	// Failed (compaction only) says why the compaction replaced nothing:
	// such a message stands for nothing in the model's history.
	Failed string
	// ToolCalls (assistant only) are the calls the reply asked for.
	ToolCalls []MessageToolCall
	// Incomplete (assistant only): the part of a reply the user saw before
	// its recovery failed, was cancelled or was interrupted.
	Incomplete bool
	// TurnOutcome (user only) is how the turn this prompt started ended: its
	// stop reason, OutcomeTurnFailed or OutcomeTurnInterrupted; "" while it
	// runs.
	TurnOutcome string
	// Tool results: the call answered, how it ended, and how it was shown
	// (Text is the output the model reads). Call is the tool/call record,
	// nil when the call was never dispatched.
	ToolCallID string
	// ProviderCallID is the provider's id for the call when it is not
	// ToolCallID (MessageToolCall.ProviderID): what the model's history
	// sends back.
	ProviderCallID string
	ToolName       string
	Arguments      string // as the model wrote them
	Status         string
	Content        json.RawMessage
	Call           *ToolCall
}

// Conversation derives the committed conversation: a user message for each
// turn/start and an assistant message for each assistant/message, in log
// order. Chunks never become messages, so a step that failed, was cancelled
// or committed nothing contributes nothing. The events are checked first
// (an *InvariantError's Line is then the 1-based index of the event), so a
// conversation is only derived from a log that keeps its rules.
func Conversation(events []Event) ([]Message, error) {
	h := NewHistory()
	for _, ev := range events {
		if err := h.Add(ev, nil); err != nil {
			return nil, err
		}
	}
	return h.msgs, nil
}

// History is Conversation kept up to date one event at a time, with the
// checker's state, so that a session that keeps one never derives its
// conversation from the whole log again: after every Add, Messages equals
// Conversation of all the events added, and RetryChain and NextTurn equal
// those functions of them.
type History struct {
	c      *checker
	msgs   []Message
	userAt int                        // index of the open turn's user message, -1 if none
	calls  map[string]*ToolCall       // dispatched calls of the open turn
	asked  map[string]MessageToolCall // tool calls asked for in the open turn
	// The retry chain the next logical request continues (RetryChain).
	chainID      string
	chainRetries int
	chainUsed    map[string]int
}

// NewHistory returns the History of a log with no events yet.
func NewHistory() *History {
	return &History{c: newChecker(""), userAt: -1, calls: map[string]*ToolCall{}, asked: map[string]MessageToolCall{}, chainUsed: map[string]int{}}
}

// Grow makes room for the messages events will add, so that adding a
// long log does not copy the messages over and over as they grow. It
// returns how many that is, at most.
func (h *History) Grow(events []Event) int {
	n := messageEvents(events)
	h.msgs = slices.Grow(h.msgs, n)
	return n
}

// messageEvents counts the events in events that become a message.
func messageEvents(events []Event) int {
	n := 0
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart, TypeAssistantMessage, TypeToolResult, TypeCompaction:
			n++
		}
	}
	return n
}

// Add checks ev as the log's next event and derives what it adds. A refused
// event (an *InvariantError, as Conversation's) leaves h as it was. data,
// when not nil, is the value ev.Data was encoded from, as Log.Append was
// given it: the checker reads it instead of decoding ev.Data, as Append's
// does. Messages are still decoded from ev.Data, so they are what a reload
// gives (encoding replaces invalid UTF-8, compacts raw JSON), unless data is
// the pointer Loaded.Data holds, which was decoded from it.
func (h *History) Add(ev Event, data any) error {
	// The events that become messages are decoded once, for the checker and
	// for the message. A decode that fails leaves the checker to decode,
	// and to say what is wrong.
	v := messageData(ev, data)
	h.c.typed = data
	if v != nil {
		h.c.typed = v
	}
	err := h.c.check(ev)
	h.c.typed = nil
	if err != nil {
		return err
	}
	switch d := v.(type) {
	case *TurnStart:
		h.userAt = len(h.msgs)
		clear(h.calls)
		clear(h.asked)
		h.msgs = append(h.msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleUser, Text: d.Text, Prompt: d.Prompt, Local: d.Local})
	case *Compaction:
		h.msgs = append(h.msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleCompaction, Text: d.Summary, Replaced: d.Replaced, CompactionID: d.CompactionID, Failed: d.Failed})
	case *AssistantMessage:
		for _, tc := range d.ToolCalls {
			h.asked[tc.ID] = tc
		}
		h.msgs = append(h.msgs, Message{
			Seq: ev.Seq, Turn: d.Turn, Role: RoleAssistant, Text: d.Text, Reasoning: d.Reasoning,
			MessageID: d.MessageID, FinishReason: d.FinishReason, ToolCalls: d.ToolCalls, Incomplete: d.Incomplete,
		})
		h.endChain()
	case *ToolCall:
		h.calls[d.ToolCallID] = d
	case *ToolResult:
		h.msgs = append(h.msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleTool, ToolCallID: d.ToolCallID, ProviderCallID: h.asked[d.ToolCallID].ProviderID, ToolName: h.asked[d.ToolCallID].Name, Arguments: h.asked[d.ToolCallID].Arguments,
			Text: d.Output, Status: d.Status, Content: d.Content, Call: h.calls[d.ToolCallID]})
		delete(h.calls, d.ToolCallID)
	case *TurnEnd:
		if h.userAt >= 0 {
			h.msgs[h.userAt].TurnOutcome = turnOutcome(*d)
		}
		h.userAt = -1
		if !d.Interrupted {
			h.endChain()
		}
	case *LLMRetry:
		h.chainID, h.chainRetries = d.RetryID, d.Retry
		h.chainUsed[cmp.Or(d.Policy, "transient")]++
	}
	return nil
}

// decodeObject decodes ev.Data into a *T as the checker's decode does, or
// returns nil where that would fail.
// messageData is ev's data decoded, for the types that make messages (nil
// for the others): data itself when it is the pointer Loaded.Data holds
// (decoded from ev.Data as the log was read), else decoded now.
func messageData(ev Event, data any) any {
	switch ev.Type {
	case TypeTurnStart:
		return decodedOr[TurnStart](ev, data)
	case TypeCompaction:
		return decodedOr[Compaction](ev, data)
	case TypeAssistantMessage:
		return decodedOr[AssistantMessage](ev, data)
	case TypeToolCall:
		return decodedOr[ToolCall](ev, data)
	case TypeToolResult:
		return decodedOr[ToolResult](ev, data)
	case TypeTurnEnd:
		return decodedOr[TurnEnd](ev, data)
	case TypeLLMRetry:
		return decodedOr[LLMRetry](ev, data)
	}
	return nil
}

// eventData decodes ev's data into its type's struct (a pointer), nil when
// it can't be (the checker then says why) or the type is unknown.
func eventData(ev Event) any {
	switch ev.Type {
	case TypeSessionStart:
		return decodeObject[SessionStart](ev)
	case TypeStepStart:
		return decodeObject[StepStart](ev)
	case TypeAssistantChunk:
		return decodeObject[AssistantChunk](ev)
	case TypeStepEnd:
		return decodeObject[StepEnd](ev)
	case TypeLLMRetryStarted:
		return decodeObject[LLMRetryStarted](ev)
	case TypePermission:
		return decodeObject[Permission](ev)
	case TypeMode:
		return decodeObject[Mode](ev)
	case TypeConfig:
		return decodeObject[Config](ev)
	case TypePlan:
		return decodeObject[Plan](ev)
	case TypeStatus:
		return decodeObject[Status](ev)
	}
	return messageData(ev, nil)
}

func decodedOr[T any](ev Event, data any) any {
	if p, ok := data.(*T); ok && p != nil {
		return p
	}
	return decodeObject[T](ev)
}

func decodeObject[T any](ev Event) any {
	if d := bytes.TrimSpace(ev.Data); len(d) == 0 || d[0] != '{' {
		return nil
	}
	v := new(T)
	if Unmarshal(ev.Data, v) != nil {
		return nil
	}
	return v
}

func (h *History) endChain() {
	h.chainID, h.chainRetries = "", 0
	clear(h.chainUsed)
}

// Messages is the conversation so far. The slice is the History's own: it
// is valid until the next Add, which may append to it and sets the open
// turn's TurnOutcome when the turn ends. Callers copy what they keep.
func (h *History) Messages() []Message { return h.msgs[:len(h.msgs):len(h.msgs)] }

// NextTurn is NextTurn of the events added.
func (h *History) NextTurn() int { return h.c.turn + 1 }

// RetryChain is RetryChain of the events added; used is the caller's.
func (h *History) RetryChain() (id string, retries int, used map[string]int) {
	return h.chainID, h.chainRetries, maps.Clone(h.chainUsed)
}

func turnOutcome(d TurnEnd) string {
	switch {
	case d.Interrupted:
		return OutcomeTurnInterrupted
	case len(d.Error) > 0:
		return OutcomeTurnFailed
	}
	return d.StopReason
}

// PermissionRules returns the session's standing permission answers: for
// each scope, the outcome of the last allow_always or reject_always answer
// given for it.
func PermissionRules(events []Event) map[string]string {
	rules := map[string]string{}
	for _, ev := range events {
		if ev.Type != TypePermission {
			continue
		}
		var d Permission
		if Unmarshal(ev.Data, &d) == nil && (d.Outcome == AllowAlways || d.Outcome == RejectAlways) {
			rules[d.Scope] = d.Outcome
		}
	}
	return rules
}

// ToolCallIDs returns the ids of every tool call the events' assistant
// messages made (the ids a new call must not reuse).
func ToolCallIDs(events []Event) map[string]bool {
	ids := map[string]bool{}
	for _, ev := range events {
		if ev.Type != TypeAssistantMessage {
			continue
		}
		var m AssistantMessage
		if Unmarshal(ev.Data, &m) == nil {
			for _, c := range m.ToolCalls {
				ids[c.ID] = true
			}
		}
	}
	return ids
}

// FirstTurnStart is the session's first turn/start, decoded, which its
// title is made from; ok is false when there is none, or it does not
// decode.
func FirstTurnStart(events []Event) (d TurnStart, ok bool) {
	for _, ev := range events {
		if ev.Type != TypeTurnStart {
			continue
		}
		if err := Unmarshal(ev.Data, &d); err != nil {
			return TurnStart{}, false
		}
		return d, true
	}
	return d, false
}

// LastMode is the mode of the session's last session/mode event; "" when it
// has none (the session is in the default mode).
func LastMode(events []Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeMode {
			continue
		}
		var d Mode
		if json.Unmarshal(events[i].Data, &d) == nil && d.Mode != "" {
			return d.Mode
		}
	}
	return ""
}

// LastConfig is the value of option id in the session's last session/config
// event for it, and whether there was one.
func LastConfig(events []Event, id string) (value string, ok bool) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeConfig {
			continue
		}
		var d Config
		if json.Unmarshal(events[i].Data, &d) == nil && d.ConfigID == id {
			return d.Value, true
		}
	}
	return "", false
}

// NextTurn is the number the next turn/start must carry: one more than the
// last turn's.
func NextTurn(events []Event) int {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeTurnStart {
			continue
		}
		var d TurnStart
		if err := json.Unmarshal(events[i].Data, &d); err == nil {
			return d.Turn + 1
		}
	}
	return 1
}

// RetryChain returns the retry chain the next logical request continues: the
// chain of a turn that a dead process left unfinished, how many retries it
// numbered, and how many each policy used since the chain's last success. A
// turn that ended while its process was alive finishes its chain; then id is
// "" and the counts are zero.
func RetryChain(events []Event) (id string, retries int, used map[string]int) {
	used = map[string]int{}
	for _, ev := range events {
		switch ev.Type {
		case TypeLLMRetry:
			var d LLMRetry
			if Unmarshal(ev.Data, &d) == nil {
				id, retries = d.RetryID, d.Retry
				if d.Policy == "" {
					d.Policy = "transient"
				}
				used[d.Policy]++
			}
		case TypeAssistantMessage:
			id, retries, used = "", 0, map[string]int{}
		case TypeTurnEnd:
			var d TurnEnd
			if Unmarshal(ev.Data, &d) == nil && !d.Interrupted {
				id, retries, used = "", 0, map[string]int{}
			}
		}
	}
	return id, retries, used
}

// Unfinished is what the editor was shown of a reply that was never
// committed: the live chunks of the open turn since its last committed
// message.
type Unfinished struct {
	Step      int // the step of the last shown chunk
	MessageID string
	Text      string
	Reasoning string
}

// UnfinishedReply returns the shown, uncommitted reply of a log whose last
// turn is open (its process died mid-stream), or ok false when there is none.
func UnfinishedReply(events []Event) (u Unfinished, ok bool) {
	var text, reasoning strings.Builder
	for _, ev := range events {
		switch ev.Type {
		case TypeTurnStart, TypeAssistantMessage, TypeTurnEnd:
			text.Reset()
			reasoning.Reset()
			u, ok = Unfinished{}, false
		case TypeAssistantChunk:
			var d AssistantChunk
			if Unmarshal(ev.Data, &d) != nil || !d.Shown {
				continue
			}
			text.WriteString(d.Text)
			reasoning.WriteString(d.Reasoning)
			u.Step, u.MessageID, ok = d.Step, d.MessageID, true
		}
	}
	u.Text, u.Reasoning = text.String(), reasoning.String()
	return u, ok
}
