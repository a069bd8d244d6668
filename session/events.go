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
	// Through, when above Seq, says that this event stands for the lines
	// Seq to Through: Open joins a run of assistant/chunk lines of one
	// step, message and kind into one event (with the last line's Time), so
	// a log of a million one-character chunks costs its text in memory,
	// not a million events. It is never written.
	Through int64 `json:"-"`
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
	TypePermission       = "permission"
	TypeMode             = "session/mode"
	TypeConfig           = "session/config"
	TypeTurnEnd          = "turn/end"
	TypePlan             = "plan"
	TypeStatus           = "status"
)

// SessionStart opens every log.
type SessionStart struct {
	SessionID    string `json:"sessionId"`
	Cwd          string `json:"cwd"`
	Model        string `json:"model,omitempty"`
	AgentVersion string `json:"agentVersion,omitempty"`
	// AdditionalDirectories are the other workspace roots the session was
	// made with, in order (what a list of sessions reports).
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	// ForkedFrom is set on a session made by session/fork: the events
	// after this one up to the first turn/start of a turn after Turn are
	// copies of the parent's.
	ForkedFrom *ForkOrigin `json:"forkedFrom,omitempty"`
}

// ForkOrigin is where a forked session came from: the parent session and
// its last finished turn, the last one copied (0 when it had none).
type ForkOrigin struct {
	SessionID string `json:"sessionId"`
	Turn      int    `json:"turn"`
}

// TurnStart records the user's prompt: the editor's blocks as sent (opaque
// here) and the text the model is given for them.
//
// Local records, when the turn starts, whether Rebound answers the prompt
// itself (a slash command such as /status) without sending it to the
// model: such a turn is never part of the model's history. It is written
// on every turn/start, false too, so that a derivation reads it and never
// judges it again from the prompt; nil is a turn/start written before it
// was recorded (see Message.Local).
type TurnStart struct {
	Turn   int             `json:"turn"`
	Prompt json.RawMessage `json:"prompt"`
	Text   string          `json:"text"`
	Local  *bool           `json:"local,omitempty"`
}

// StepStart opens one provider attempt of a turn.
type StepStart struct {
	Turn  int    `json:"turn"`
	Step  int    `json:"step"`
	Model string `json:"model,omitempty"`
	// ReasoningEffort is the effort asked of the model, when one was.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
	// MessageID is the id the attempt's reply goes under (the same for
	// every attempt of one request): named before any of it is shown, it
	// is what ties the shown journal's chunks to this session's open
	// reply. Logs from before it have none.
	MessageID string `json:"messageId,omitempty"`
}

// AssistantChunk is streamed output of a step. Chunks are a record of the
// attempt, never a message: only AssistantMessage commits.
//
// In held mode a chunk is what arrived. In live mode (Shown) it is what was
// sent to the editor, written before it was sent, under the message's id:
// an interrupted turn's shown chunks are committed on load as the
// incomplete reply the user saw.
type AssistantChunk struct {
	Turn      int    `json:"turn"`
	Step      int    `json:"step"`
	Text      string `json:"text,omitempty"`
	Reasoning string `json:"reasoning,omitempty"`
	Shown     bool   `json:"shown,omitempty"`
	MessageID string `json:"messageId,omitempty"`
}

// AssistantMessage commits the reply of a successful step. ToolCalls are
// the calls the reply asks for; each must get a tool/result before the next
// step starts or the turn ends.
type AssistantMessage struct {
	Turn         int               `json:"turn"`
	Step         int               `json:"step"`
	MessageID    string            `json:"messageId"`
	Text         string            `json:"text"`
	Reasoning    string            `json:"reasoning,omitempty"`
	FinishReason string            `json:"finishReason,omitempty"`
	ToolCalls    []MessageToolCall `json:"toolCalls,omitempty"`
	// Incomplete marks a reply the user saw part of (live mode) whose
	// recovery failed, was cancelled or was interrupted: what was shown is
	// committed as it was. It may come after its step has ended.
	Incomplete bool `json:"incomplete,omitempty"`
}

// MessageToolCall is one tool call of a committed reply, as the model wrote
// it (Arguments may not be valid JSON). ID is the call's id in the session:
// unique in it, the key of its tool/call, tool/result and permission, and
// what the editor is shown. ProviderID is the id the provider gave the
// call when that could not be ID (empty when it is ID, or the provider
// gave none): the model's history sends it back as the provider wrote it.
type MessageToolCall struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments"`
	ProviderID string `json:"providerId,omitempty"`
}

// ModelID is the call's id as the provider knows it.
func (c MessageToolCall) ModelID() string {
	if c.ProviderID != "" {
		return c.ProviderID
	}
	return c.ID
}

// Step outcomes.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
	// OutcomeTruncated: the reply stopped at the output limit and is not
	// committed on its own: it is discarded for a retry with a larger budget,
	// or it is a part that a later step's message joins.
	OutcomeTruncated = "truncated"
)

// StepEnd closes a step. Failure holds the failure facts of a failed step.
type StepEnd struct {
	Turn    int             `json:"turn"`
	Step    int             `json:"step"`
	Outcome string          `json:"outcome"`
	Failure json.RawMessage `json:"failure,omitempty"`
	// Usage is what the step's finished request used, as the editor was
	// told (usage_update); only on a step whose request finished.
	Usage *StepUsage `json:"usage,omitempty"`
	// StreamedChars counts the characters (text and reasoning) the attempt
	// streamed that were held back from the editor, ShownChars those it
	// showed live: the log keeps no record per chunk (the text is in the
	// committed message), so these say what a discarded attempt had.
	StreamedChars int `json:"streamedChars,omitempty"`
	ShownChars    int `json:"shownChars,omitempty"`
}

// StepUsage is a finished request's usage. Used is the tokens in context
// after it (prompt plus completion), estimated when the provider reported
// none; Size the context window, 0 when unknown (no update was sent); Cost
// the session's cumulative cost so far, when any step had one.
type StepUsage struct {
	Used             uint64   `json:"used"`
	Size             uint64   `json:"size,omitempty"`
	Estimated        bool     `json:"estimated,omitempty"`
	PromptTokens     int      `json:"promptTokens,omitempty"`
	CompletionTokens int      `json:"completionTokens,omitempty"`
	CachedTokens     int      `json:"cachedTokens,omitempty"`
	Cost             *float64 `json:"cost,omitempty"`
	Currency         string   `json:"currency,omitempty"`
}

// TurnEnd closes a turn in every outcome. StopReason is the ACP stop reason
// when the turn answered one; Error holds the failure facts when it failed.
//
// Interrupted marks a turn/end written on load for a turn whose process died:
// its retry chain, if any, is not finished, and the next logical request of
// the session continues it, so a crash loop cannot multiply the budget.
//
// Title is the session's title (what a list of sessions shows), made from
// its first prompt and recorded by the first turn to end: the first turn,
// or in a log written before titles were recorded, the next one. The last
// title in the log holds.
type TurnEnd struct {
	Turn        int             `json:"turn"`
	StopReason  string          `json:"stopReason,omitempty"`
	Error       json.RawMessage `json:"error,omitempty"`
	Interrupted bool            `json:"interrupted,omitempty"`
	Title       string          `json:"title,omitempty"`
}

// LLMRetry records the decision to retry, written and synced before the wait
// so that a crash during the wait still leaves it on record and counters can
// be rebuilt from the log. Retry counts from 1 within a chain and every retry
// of one recovery sequence keeps the chain's RetryID.
type LLMRetry struct {
	Turn       int    `json:"turn"`
	Step       int    `json:"step"` // the step that failed
	RetryID    string `json:"retryId"`
	Retry      int    `json:"retry"`
	MaxRetries int    `json:"maxRetries"`
	DelayMs    int64  `json:"delayMs"`
	Policy     string `json:"policy,omitempty"`
	// PolicyRetry numbers the retry within its policy (MaxRetries is that
	// policy's budget); Retry numbers it within the chain.
	PolicyRetry int             `json:"policyRetry,omitempty"`
	Action      string          `json:"action,omitempty"` // what the retry changes: compact, fallback, strip_images, escalate, continue
	Model       string          `json:"model,omitempty"`  // the model the retry uses, when it changed
	Failure     json.RawMessage `json:"failure,omitempty"`
}

// LLMRetryStarted records that the wait of an LLMRetry is over and its
// attempt begins; a retry without one was interrupted during the wait.
type LLMRetryStarted struct {
	Turn    int    `json:"turn"`
	RetryID string `json:"retryId"`
	Retry   int    `json:"retry"`
}

// ToolCall records that a tool call of a committed step is dispatched,
// synced before it runs. Arguments are kept as the model wrote them, which
// may not be valid JSON. Title, Kind and Locations are how the editor was
// shown the call, kept so a replay shows it the same way.
type ToolCall struct {
	Turn       int      `json:"turn"`
	Step       int      `json:"step"`
	ToolCallID string   `json:"toolCallId"`
	Name       string   `json:"name"`
	Arguments  string   `json:"arguments"`
	Title      string   `json:"title,omitempty"`
	Kind       string   `json:"kind,omitempty"`
	Locations  []string `json:"locations,omitempty"`
}

// Tool result statuses. ToolAborted is the result of a call that was never
// run or never finished (cancelled, interrupted by a crash), so every call
// still has a result.
const (
	ToolCompleted = "completed"
	ToolFailed    = "failed"
	ToolAborted   = "aborted"
)

// ToolResult answers a tool call of the turn's last committed reply. Output
// is what the model reads; Content is what the editor was shown (ACP tool
// call content, opaque here), for replay.
type ToolResult struct {
	Turn       int             `json:"turn"`
	ToolCallID string          `json:"toolCallId"`
	Status     string          `json:"status"`
	Output     string          `json:"output"`
	Content    json.RawMessage `json:"content,omitempty"`
}

// Permission outcomes: the option the user picked, or cancelled when the
// turn was cancelled before they answered.
const (
	AllowOnce           = "allow_once"
	AllowAlways         = "allow_always"
	RejectOnce          = "reject_once"
	RejectAlways        = "reject_always"
	PermissionCancelled = "cancelled"
)

// Permission records the user's answer to a permission request. An
// *_always answer is a rule for the rest of the session: Scope says what it
// covers (a tool name, or a tool and one command), and it is derived from
// the log again on load.
type Permission struct {
	Turn       int    `json:"turn"`
	ToolCallID string `json:"toolCallId"`
	Scope      string `json:"scope"`
	Outcome    string `json:"outcome"`
}

// Mode records that the session's mode (which tools are offered and which
// calls ask permission) changed. It may come anywhere after session/start,
// inside a turn too, where it applies from the next step; the last one is
// the session's mode when it is loaded again. The mode's names are the
// agent's: the log only requires one.
type Mode struct {
	Mode string `json:"mode"`
}

// Config records that one of the session's configuration options other than
// the mode (the model, the reasoning effort) changed. Like Mode, it may come
// anywhere after session/start and applies from the next step; the last one
// for an option is its value when the session is loaded again. An empty
// value means the configured default.
type Config struct {
	ConfigID string `json:"configId"`
	Value    string `json:"value"`
}

// Compaction records that the request of a step was compacted to fit the
// context window: Summary stands for the Replaced oldest messages.
//
// Replaced is how many messages of the model's history (oldest first, before
// the turn's own prompt) the summary stands for from now on; sizes are in
// characters of message content, the measure used to decide the compacted
// request was smaller.
//
// Failed, when set, says why a compaction replaced nothing although its
// summary request was made (the summary failed, did not finish, or would
// not have made the request smaller): Summary is then empty and Replaced 0,
// and the record is the log's account of that request.
type Compaction struct {
	Turn         int    `json:"turn"`
	Step         int    `json:"step,omitempty"`
	CompactionID string `json:"compactionId,omitempty"`
	Summary      string `json:"summary"`
	Replaced     int    `json:"replaced"`
	BeforeChars  int    `json:"beforeChars,omitempty"`
	AfterChars   int    `json:"afterChars,omitempty"`
	Failed       string `json:"failed,omitempty"`
}

// Plan records the agent's plan as an update_plan call set it, between that
// call's tool/call and tool/result: the whole plan, which replaces the one
// before. The editor is sent the same entries.
type Plan struct {
	Turn       int         `json:"turn"`
	ToolCallID string      `json:"toolCallId"`
	Entries    []PlanEntry `json:"entries"`
}

// Status records a status of Rebound's own as the editor is shown it (a
// wait and its retry, a compaction, the fallback, MCP servers starting or
// not available, a give-up, a refusal: the agent's status tool call), at
// each change, before it is shown, whichever way the editor shows it: a
// load shows each status as it was last shown, where it was first shown,
// under the same id (WaitStatuses). It is no tool call and never in the
// model's history. Detail is the content shown; a record without one
// leaves the last one shown, as an update without content does.
type Status struct {
	Turn     int    `json:"turn"`
	StatusID string `json:"statusId"`
	Title    string `json:"title"`
	Detail   string `json:"detail,omitempty"`
	State    string `json:"state"` // StatusInProgress, StatusCompleted or StatusFailed
}

// States of a Status (ACP's tool call statuses).
const (
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// MaxStatusBytes bounds a status's title and its detail each.
const MaxStatusBytes = 16 << 10

// PlanEntry is one task of a Plan.
type PlanEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"`   // pending, in_progress, completed
	Priority string `json:"priority"` // high, medium, low
}
