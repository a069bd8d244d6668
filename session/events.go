// Package session is the durable record of a conversation: one append-only
// JSONL file per session, the event types written to it, loading with
// invariant checks and repair of a torn tail, and derivation of the committed
// conversation from the events. It knows nothing of ACP or providers: prompt
// blocks and failure facts are stored as opaque JSON.
package session

import (
	"encoding/json"
	"time"
)

// SchemaVersion is written as `v` on every line; bump it on an incompatible
// change of any event's data.
const SchemaVersion = 1

// Event is one line of a session log.
type Event struct {
	Seq  int64           `json:"seq"`
	V    int             `json:"v"`
	Time time.Time       `json:"time"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Event types.
const (
	TypeSessionStart     = "session/start"
	TypeTurnStart        = "turn/start"
	TypeStepStart        = "step/start"
	TypeAssistantChunk   = "assistant/chunk"
	TypeAssistantMessage = "assistant/message"
	TypeStepEnd          = "step/end"
	TypeToolCall         = "tool/call"
	TypeToolResult       = "tool/result"
	TypeLLMRetry         = "llm/retry"
	TypeLLMRetryStarted  = "llm/retry-started"
	TypeCompaction       = "compaction"
	TypeTurnEnd          = "turn/end"
)

// SessionStart opens every log.
type SessionStart struct {
	SessionID    string `json:"sessionId"`
	Cwd          string `json:"cwd"`
	Model        string `json:"model,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
}

// TurnStart records the user's prompt: the editor's blocks as sent (opaque
// here) and the text the model is given for them.
type TurnStart struct {
	Turn   int             `json:"turn"`
	Prompt json.RawMessage `json:"prompt"`
	Text   string          `json:"text"`
}

// StepStart opens one provider attempt of a turn.
type StepStart struct {
	Turn  int    `json:"turn"`
	Step  int    `json:"step"`
	Model string `json:"model,omitempty"`
}

// AssistantChunk is streamed output of a step as it arrived. Chunks are a
// record of the attempt, never a message: only AssistantMessage commits.
type AssistantChunk struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
}

// AssistantMessage commits the reply of a successful step.
type AssistantMessage struct {
	Turn         int    `json:"turn"`
	Step         int    `json:"step"`
	MessageID    string `json:"messageId"`
	Text         string `json:"text"`
	Reasoning    string `json:"reasoning,omitempty"`
	FinishReason string `json:"finishReason,omitempty"`
}

// Step outcomes.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// StepEnd closes a step. Failure holds the failure facts of a failed step.
type StepEnd struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Outcome string          `json:"outcome"`
	Failure json.RawMessage `json:"failure,omitempty"`
}

// TurnEnd closes a turn in every outcome. StopReason is the ACP stop reason
// when the turn answered one; Error holds the failure facts when it failed.
type TurnEnd struct {
	Turn       int             `json:"turn"`
	StopReason string          `json:"stopReason,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}
