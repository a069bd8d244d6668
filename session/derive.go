package session

import (
	"encoding/json"
	"strings"
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleCompaction marks where a summary replaced older history for the model.
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
	Prompt       json.RawMessage
	FinishReason string
	// Replaced (compaction only): how many earlier messages of the model's
	// history Text, a summary, stands for from here on.
	Replaced     int
	CompactionID string
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
	ToolName   string
	Arguments  string // as the model wrote them
	Status     string
	Content    json.RawMessage
	Call       *ToolCall
}

// Conversation derives the committed conversation: a user message for each
// turn/start and an assistant message for each assistant/message, in log
// order. Chunks never become messages, so a step that failed, was cancelled
// or committed nothing contributes nothing. The events are checked first
// (an *InvariantError's Line is then the 1-based index of the event), so a
// conversation is only derived from a log that keeps its rules.
func Conversation(events []Event) ([]Message, error) {
	c := newChecker("")
	var msgs []Message
	userAt := -1                          // index of the open turn's user message
	calls := map[string]*ToolCall{}       // dispatched calls of the open turn
	asked := map[string]MessageToolCall{} // tool calls asked for in the open turn
	for _, ev := range events {
		if err := c.check(ev); err != nil {
			return nil, err
		}
		switch ev.Type {
		case TypeTurnStart:
			var d TurnStart
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err // unreachable: check decoded it
			}
			userAt = len(msgs)
			clear(calls)
			clear(asked)
			msgs = append(msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleUser, Text: d.Text, Prompt: d.Prompt})
		case TypeCompaction:
			var d Compaction
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			msgs = append(msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleCompaction, Text: d.Summary, Replaced: d.Replaced, CompactionID: d.CompactionID})
		case TypeAssistantMessage:
			var d AssistantMessage
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			for _, tc := range d.ToolCalls {
				asked[tc.ID] = tc
			}
			msgs = append(msgs, Message{
				Seq: ev.Seq, Turn: d.Turn, Role: RoleAssistant, Text: d.Text, Reasoning: d.Reasoning,
				MessageID: d.MessageID, FinishReason: d.FinishReason, ToolCalls: d.ToolCalls, Incomplete: d.Incomplete,
			})
		case TypeToolCall:
			var d ToolCall
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			calls[d.ToolCallID] = &d
		case TypeToolResult:
			var d ToolResult
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			msgs = append(msgs, Message{Seq: ev.Seq, Turn: d.Turn, Role: RoleTool, ToolCallID: d.ToolCallID, ToolName: asked[d.ToolCallID].Name, Arguments: asked[d.ToolCallID].Arguments,
				Text: d.Output, Status: d.Status, Content: d.Content, Call: calls[d.ToolCallID]})
			delete(calls, d.ToolCallID)
		case TypeTurnEnd:
			var d TurnEnd
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return nil, err
			}
			if userAt >= 0 {
				msgs[userAt].TurnOutcome = turnOutcome(d)
			}
			userAt = -1
		}
	}
	return msgs, nil
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
		if json.Unmarshal(ev.Data, &d) == nil && (d.Outcome == AllowAlways || d.Outcome == RejectAlways) {
			rules[d.Scope] = d.Outcome
		}
	}
	return rules
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
			if json.Unmarshal(ev.Data, &d) == nil {
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
			if json.Unmarshal(ev.Data, &d) == nil && !d.Interrupted {
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
			if json.Unmarshal(ev.Data, &d) != nil || !d.Shown {
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
