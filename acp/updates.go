package acp

// Constructors for the session updates Rebound sends, one per kind, so a
// caller names the kind and the members it needs and cannot set members
// of another kind (SessionUpdate is a flat union). Tool calls, which have
// many optional members, are built from a ToolCallUpdate (AsStart,
// AsUpdate). Outside this package no SessionUpdate is written as a literal.

// Chunk is a *_chunk update of kind (UpdateUserMessageChunk,
// UpdateAgentMessageChunk or UpdateAgentThoughtChunk), for a caller that
// holds the kind as data. messageID may be "".
func Chunk(kind, messageID string, b ContentBlock) SessionUpdate {
	return SessionUpdate{SessionUpdate: kind, Content: &b, MessageID: messageID}
}

// UserMessageChunk is a piece of the user's message (a replayed prompt),
// under messageID: clients (Zed) tell one prompt from the next by it.
func UserMessageChunk(messageID string, b ContentBlock) SessionUpdate {
	return Chunk(UpdateUserMessageChunk, messageID, b)
}

// AgentMessageChunk is a piece of the agent's reply.
func AgentMessageChunk(messageID string, b ContentBlock) SessionUpdate {
	return Chunk(UpdateAgentMessageChunk, messageID, b)
}

// AgentThoughtChunk is a piece of the agent's reasoning.
func AgentThoughtChunk(messageID string, b ContentBlock) SessionUpdate {
	return Chunk(UpdateAgentThoughtChunk, messageID, b)
}

// AsStart is u as a tool_call update, which announces the call; its title
// is always sent (the schema requires one).
func (u ToolCallUpdate) AsStart() SessionUpdate {
	s := u.AsUpdate()
	s.SessionUpdate = UpdateToolCall
	return s
}

// Notice is a notice for the user; severity is "info" or "warning".
func Notice(severity, title, description string) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateNotice, Severity: severity, Title: title, Description: description}
}

// CompactionStarted says a compaction is being made.
func CompactionStarted(id string) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateCompaction, CompactionID: id, Status: "in_progress"}
}

// CompactionCompleted says a compaction replaced the history with summary.
func CompactionCompleted(id string, summary []ContentBlock) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateCompaction, CompactionID: id, Status: "completed", Summary: summary}
}

// CompactionFailed says a compaction was not made, and why.
func CompactionFailed(id, why string) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateCompaction, CompactionID: id, Status: "failed", Error: why}
}

// SessionInfoUpdate is a session_info_update; an empty title or updatedAt
// (ISO 8601) is left out.
func SessionInfoUpdate(title, updatedAt string) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateSessionInfo, Title: title, UpdatedAt: updatedAt}
}

// CurrentModeUpdate says the session's mode is now modeID.
func CurrentModeUpdate(modeID string) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateCurrentMode, CurrentModeID: modeID}
}

// ConfigOptionUpdate is the session's full list of configuration options.
func ConfigOptionUpdate(options []ConfigOption) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateConfigOption, ConfigOptions: options}
}

// AvailableCommandsUpdate is the full list of slash commands the session
// offers.
func AvailableCommandsUpdate(commands []AvailableCommand) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateAvailableCommands, AvailableCommands: commands}
}

// PlanUpdate is the whole plan; the client replaces what it showed. It is
// sent as a list even when entries is nil (an empty plan clears it).
func PlanUpdate(entries []PlanEntry) SessionUpdate {
	if entries == nil {
		entries = []PlanEntry{}
	}
	return SessionUpdate{SessionUpdate: UpdatePlan, Entries: entries}
}

// UsageUpdate is the tokens in context (used) and the context window
// (size); cost, the session's cumulative cost, is left out when nil.
func UsageUpdate(used, size uint64, cost *Cost) SessionUpdate {
	return SessionUpdate{SessionUpdate: UpdateUsage, Used: used, Size: size, Cost: cost}
}

// WithMeta is u with _meta set to m, for the extensions that ride on a
// standard kind.
func (u SessionUpdate) WithMeta(m Meta) SessionUpdate {
	u.Meta = m
	return u
}
