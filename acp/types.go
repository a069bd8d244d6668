package acp

import "encoding/json"

// ProtocolVersion is the only ACP major version Rebound speaks.
const ProtocolVersion = 1

// Meta is the free-form `_meta` object ACP allows on most messages.
type Meta map[string]any

// Implementation names a client or agent (clientInfo / agentInfo).
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

type FileSystemCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// ClientSessionCapabilities: a non-nil member means the client advertised it
// (the schema says `{}` advertises support, omitted or null means none).
type ClientSessionCapabilities struct {
	Notices    json.RawMessage `json:"notices,omitempty"`
	Compaction json.RawMessage `json:"compaction,omitempty"`
}

type ClientCapabilities struct {
	FS       FileSystemCapabilities     `json:"fs"`
	Terminal bool                       `json:"terminal"`
	Session  *ClientSessionCapabilities `json:"session,omitempty"`
	// Auth says which auth method types the client handles (auth.go).
	Auth *AuthCapabilities `json:"auth,omitempty"`
	// Elicitation is kept raw: only its form member is read
	// (ElicitationForm), and a malformed one advertises nothing.
	Elicitation json.RawMessage `json:"elicitation,omitempty"`
	Meta        Meta            `json:"_meta,omitempty"`
}

// Notices reports whether the client can present `notice` session updates.
func (c ClientCapabilities) Notices() bool {
	return c.Session != nil && advertised(c.Session.Notices)
}

// Compaction reports whether the client understands `compaction_update`.
func (c ClientCapabilities) Compaction() bool {
	return c.Session != nil && advertised(c.Session.Compaction)
}

// TerminalAuth reports whether the client can run terminal auth methods.
func (c ClientCapabilities) TerminalAuth() bool {
	return c.Auth != nil && c.Auth.Terminal
}

// TerminalAuthByMeta reports whether the client runs a method's
// _meta["terminal-auth"] command (TerminalAuthMetaKey).
func (c ClientCapabilities) TerminalAuthByMeta() bool {
	v, ok := c.Meta[TerminalAuthMetaKey].(bool)
	return ok && v
}

// ElicitationForm reports whether the client advertised
// clientCapabilities.elicitation.form (an object: `{}` advertises it,
// omitted or null does not). Whatever else is there is ignored, as the
// schema's default-on-error asks.
func (c ClientCapabilities) ElicitationForm() bool {
	var e struct {
		Form json.RawMessage `json:"form"`
	}
	if json.Unmarshal(c.Elicitation, &e) != nil {
		return false
	}
	return firstByte(e.Form) == '{'
}

// RichErrors reports whether the client shows it understands Rebound's
// richer messages (it advertises session.notices, or reads
// _meta["rebound/retry"]: clientCapabilities._meta["rebound/retry"] set), so
// an error's data is for it. Clients in general show data as text: Zed (its
// ACP library) appends it, pretty-printed JSON, to the message it shows.
func (c ClientCapabilities) RichErrors() bool {
	if c.Notices() {
		return true
	}
	v, ok := c.Meta[MetaRetry]
	return ok && v != nil && v != false
}

func advertised(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

type InitializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         *Implementation    `json:"clientInfo,omitempty"`
	Meta               Meta               `json:"_meta,omitempty"`
}

type PromptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type AgentCapabilities struct {
	LoadSession         bool                 `json:"loadSession"`
	PromptCapabilities  PromptCapabilities   `json:"promptCapabilities"`
	SessionCapabilities *SessionCapabilities `json:"sessionCapabilities,omitempty"`
	McpCapabilities     *McpCapabilities     `json:"mcpCapabilities,omitempty"`
	// Auth advertises the sign-in methods beyond authenticate (auth.go).
	Auth *AgentAuthCapabilities `json:"auth,omitempty"`
	// Providers (unstable, unstable.go) advertises providers/list, set
	// and disable.
	Providers *struct{} `json:"providers,omitempty"`
	Meta      Meta      `json:"_meta,omitempty"`
}

// SessionCapabilities advertises the session methods beyond the baseline
// (new, prompt, cancel, update; load is LoadSession): a non-nil member is
// sent as {}, which the schema reads as "supported".
type SessionCapabilities struct {
	List   *struct{} `json:"list,omitempty"`
	Resume *struct{} `json:"resume,omitempty"`
	Close  *struct{} `json:"close,omitempty"`
	Delete *struct{} `json:"delete,omitempty"`
	// AdditionalDirectories: the lifecycle requests take
	// additionalDirectories, and session/list returns them.
	AdditionalDirectories *struct{} `json:"additionalDirectories,omitempty"`
	// Fork is unstable (unstable.go): session/fork.
	Fork *struct{} `json:"fork,omitempty"`
}

type InitializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities AgentCapabilities `json:"agentCapabilities"`
	AuthMethods       []AuthMethod      `json:"authMethods"`
	AgentInfo         *Implementation   `json:"agentInfo,omitempty"`
}

type NewSessionRequest struct {
	Cwd string `json:"cwd"`
	// AdditionalDirectories are more workspace roots (absolute) that tools
	// may use besides Cwd.
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer `json:"mcpServers"`
	Meta                  Meta        `json:"_meta,omitempty"`
}

type NewSessionResponse struct {
	SessionID string `json:"sessionId"`
	// Modes and ConfigOptions are the session's modes and configuration
	// options, left out when the agent has none.
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
}

type LoadSessionRequest struct {
	SessionID             string      `json:"sessionId"`
	Cwd                   string      `json:"cwd"`
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer `json:"mcpServers"`
	Meta                  Meta        `json:"_meta,omitempty"`
}

type LoadSessionResponse struct {
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
}

// ListSessionsRequest is the params of session/list. Both members are
// optional (null is read as absent).
type ListSessionsRequest struct {
	// Cwd, when set, lists only the sessions made in that directory
	// (absolute).
	Cwd string `json:"cwd,omitempty"`
	// Cursor is the NextCursor of the page before; empty for the first.
	Cursor string `json:"cursor,omitempty"`
	Meta   Meta   `json:"_meta,omitempty"`
}

// SessionInfo is one session in a session/list page.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	// AdditionalDirectories are the session's other workspace roots, in
	// order; none is the same as empty.
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
	Title                 string   `json:"title,omitempty"`
	// UpdatedAt is the time of the session's last activity, ISO 8601.
	UpdatedAt string `json:"updatedAt,omitempty"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// ListSessionsResponse is the result of session/list: one page, and the
// cursor of the next when there is one.
type ListSessionsResponse struct {
	Sessions   []SessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
	Meta       Meta          `json:"_meta,omitempty"`
}

// ResumeSessionRequest is the params of session/resume: session/load
// without the replay.
type ResumeSessionRequest struct {
	SessionID             string      `json:"sessionId"`
	Cwd                   string      `json:"cwd"`
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer `json:"mcpServers,omitempty"`
	Meta                  Meta        `json:"_meta,omitempty"`
}

type ResumeSessionResponse struct {
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
	Meta          Meta              `json:"_meta,omitempty"`
}

// SessionMode is one mode a session can be in.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SessionModeState is the session's current mode and the modes it offers.
type SessionModeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

// SetSessionModeRequest is the params of session/set_mode.
type SetSessionModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

type SetSessionModeResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// ConfigOption is a session configuration option. Rebound's are selects
// (Type "select"): CurrentValue is one of Options' values.
type ConfigOption struct {
	ID           string               `json:"id"`
	Name         string               `json:"name"`
	Description  string               `json:"description,omitempty"`
	Category     string               `json:"category,omitempty"`
	Type         string               `json:"type"`
	CurrentValue string               `json:"currentValue"`
	Options      []ConfigOptionChoice `json:"options"`
}

// ConfigOptionSelect is ConfigOption.Type of a single-value selector.
const ConfigOptionSelect = "select"

// ConfigOptionChoice is one value a select option can take.
type ConfigOptionChoice struct {
	Value       string `json:"value"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SetSessionConfigOptionRequest is the params of session/set_config_option.
// Value is a value id; a boolean value (Type "boolean") is kept raw, for
// the agent to refuse or read.
type SetSessionConfigOptionRequest struct {
	SessionID string          `json:"sessionId"`
	ConfigID  string          `json:"configId"`
	Type      string          `json:"type,omitempty"`
	Value     json.RawMessage `json:"value"`
	Meta      Meta            `json:"_meta,omitempty"`
}

// SetSessionConfigOptionResponse has every option and its current value.
type SetSessionConfigOptionResponse struct {
	ConfigOptions []ConfigOption `json:"configOptions"`
	Meta          Meta           `json:"_meta,omitempty"`
}

// CloseSessionRequest is the params of session/close.
type CloseSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

type CloseSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// DeleteSessionRequest is the params of session/delete.
type DeleteSessionRequest struct {
	SessionID string `json:"sessionId"`
	Meta      Meta   `json:"_meta,omitempty"`
}

type DeleteSessionResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

type PromptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
	Meta      Meta           `json:"_meta,omitempty"`
}

// StopReason values (ACP prompt-turn spec).
type StopReason string

const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

type PromptResponse struct {
	StopReason StopReason `json:"stopReason"`
	// Usage (unstable, unstable.go) is the tokens this turn's model
	// requests used; nil when the provider reported none.
	Usage *Usage `json:"usage,omitempty"`
	Meta  Meta   `json:"_meta,omitempty"`
}

type CancelNotification struct {
	SessionID string `json:"sessionId"`
}

// ContentBlock is the union of ACP content blocks; Type selects the members
// that apply. Rebound reads text, resource_link and resource (embedded
// context); others are kept as-is so they can be logged and replayed.
type ContentBlock struct {
	Type string `json:"type"`
	// text
	Text string `json:"text,omitempty"`
	// image / audio
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	// resource_link
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// resource (embedded)
	Resource *EmbeddedResource `json:"resource,omitempty"`
	Meta     Meta              `json:"_meta,omitempty"`
}

// EmbeddedResource is TextResourceContents or BlobResourceContents.
type EmbeddedResource struct {
	URI      string  `json:"uri"`
	MimeType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

// TextBlock is a convenience constructor for a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: "text", Text: s} }

// Session update kinds Rebound sends. Never invent a kind: v1 clients drop
// unknown ones.
const (
	UpdateUserMessageChunk  = "user_message_chunk"
	UpdateAgentMessageChunk = "agent_message_chunk"
	UpdateAgentThoughtChunk = "agent_thought_chunk"
	UpdateToolCall          = "tool_call"
	UpdateToolCallUpdate    = "tool_call_update"
	UpdateSessionInfo       = "session_info_update"
	UpdateNotice            = "notice"
	UpdateCompaction        = "compaction_update"
	UpdateCurrentMode       = "current_mode_update"
	UpdateConfigOption      = "config_option_update"
	UpdatePlan              = "plan"
	UpdateUsage             = "usage_update"
)

// SessionUpdate is the union of the update kinds Rebound sends; SessionUpdate
// (the discriminator) selects the members that apply. Its own MarshalJSON
// and UnmarshalJSON (tools.go) define the wire form: both Content (chunks)
// and ToolContent (tool calls) are "content" there, so set at most one.
type SessionUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	// *_chunk
	Content   *ContentBlock `json:"content,omitempty"`
	MessageID string        `json:"messageId,omitempty"`
	// notice; Title is also a tool call's title (always sent for tool_call,
	// which requires it)
	Severity    string `json:"severity,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// compaction_update; Status is also a tool call's status
	// (ToolStatusPending and the others)
	CompactionID string         `json:"compactionId,omitempty"`
	Status       string         `json:"status,omitempty"` // in_progress, completed, failed, cancelled
	Summary      []ContentBlock `json:"summary,omitempty"`
	Error        string         `json:"error,omitempty"`
	// tool_call, tool_call_update. A nil ToolContent or Locations is left
	// out; a non-nil empty one is sent as [] (a tool_call_update then
	// clears the collection).
	ToolCallID  string             `json:"toolCallId,omitempty"`
	Name        string             `json:"name,omitempty"` // the tool's programmatic name
	Kind        ToolKind           `json:"kind,omitempty"`
	ToolContent []ToolCallContent  `json:"-"` // "content" on the wire
	Locations   []ToolCallLocation `json:"locations,omitzero"`
	RawInput    json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput   json.RawMessage    `json:"rawOutput,omitempty"`
	// session_info_update: Title (above) and UpdatedAt, ISO 8601
	UpdatedAt string `json:"updatedAt,omitempty"`
	// current_mode_update
	CurrentModeID string `json:"currentModeId,omitempty"`
	// config_option_update: the full list
	ConfigOptions []ConfigOption `json:"configOptions,omitempty"`
	// available_commands_update: the full list
	AvailableCommands []AvailableCommand `json:"availableCommands,omitempty"`
	// plan: the whole plan; the client replaces what it showed. Non-nil
	// for a plan update, even when empty (the schema requires entries).
	Entries []PlanEntry `json:"entries,omitzero"`
	// usage_update: tokens in context and the window, always sent for that
	// kind (the schema requires both); Cost is cumulative for the session.
	Used uint64 `json:"-"`
	Size uint64 `json:"-"`
	Cost *Cost  `json:"-"`
	Meta Meta   `json:"_meta,omitempty"`
}

// PlanEntry is one task of the agent's plan (ACP PlanEntry).
type PlanEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"` // PlanPriorityHigh, …
	Status   string `json:"status"`   // PlanStatusPending, …
}

// Plan entry priorities and statuses (ACP PlanEntryPriority, PlanEntryStatus).
const (
	PlanPriorityHigh   = "high"
	PlanPriorityMedium = "medium"
	PlanPriorityLow    = "low"

	PlanStatusPending    = "pending"
	PlanStatusInProgress = "in_progress"
	PlanStatusCompleted  = "completed"
)

// SessionNotification is the params of `session/update`.
type SessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    SessionUpdate `json:"update"`
}

// UpdateAvailableCommands is the slash commands a session offers; it is
// sent after the session's answer (clients drop it before).
const UpdateAvailableCommands = "available_commands_update"

// AvailableCommand is a slash command the client may offer: the user types
// "/Name" at the start of a prompt.
type AvailableCommand struct {
	Name        string                 `json:"name"`
	Description string                 `json:"description"`
	Input       *AvailableCommandInput `json:"input,omitempty"`
}

// AvailableCommandInput is the unstructured input a command takes after
// its name; Hint is shown while none is typed.
type AvailableCommandInput struct {
	Hint string `json:"hint"`
}

// Cost is a session's cumulative cost (usage_update), in an ISO 4217
// currency.
type Cost struct {
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
}
