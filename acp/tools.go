package acp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ToolKind is the category of a tool call; clients pick icons by it.
type ToolKind string

const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode"
	ToolKindOther      ToolKind = "other"
)

// ToolCallStatus is a tool call's execution status.
type ToolCallStatus string

// Tool call statuses. They are untyped so that they fit both
// ToolCallUpdate.Status and SessionUpdate.Status (a plain string, shared
// with compaction_update).
const (
	ToolStatusPending    = "pending" // not started: input streaming or awaiting approval
	ToolStatusInProgress = "in_progress"
	ToolStatusCompleted  = "completed"
	ToolStatusFailed     = "failed"
)

// Tool call content types (ToolCallContent.Type).
const (
	ToolContentContent  = "content"
	ToolContentDiff     = "diff"
	ToolContentTerminal = "terminal"
)

// ToolCallContent is the union of what a tool call can show: a content
// block, a diff, or a live terminal. Type selects the members that apply;
// build it with ContentText, ContentBlockOf, ContentDiff or ContentTerminal.
// It marshals exactly the members of its type, with the required ones always
// present (a diff's newText even when empty, its oldText as null for a new
// file).
type ToolCallContent struct {
	Type string `json:"type"`
	// content
	Content *ContentBlock `json:"content,omitempty"`
	// diff
	Path    string  `json:"path,omitempty"`
	OldText *string `json:"oldText,omitempty"` // nil: a new file (null on the wire)
	NewText string  `json:"newText,omitempty"`
	// terminal
	TerminalID string `json:"terminalId,omitempty"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// ContentText is tool call content showing text.
func ContentText(s string) ToolCallContent { return ContentBlockOf(TextBlock(s)) }

// ContentBlockOf is tool call content showing any content block.
func ContentBlockOf(b ContentBlock) ToolCallContent {
	return ToolCallContent{Type: ToolContentContent, Content: &b}
}

// ContentDiff is tool call content showing a change to the file at path
// (absolute); oldText is nil for a new file.
func ContentDiff(path string, oldText *string, newText string) ToolCallContent {
	return ToolCallContent{Type: ToolContentDiff, Path: path, OldText: oldText, NewText: newText}
}

// ContentTerminal is tool call content embedding the terminal id, created
// with terminal/create. Embed it before releasing the terminal.
func ContentTerminal(id string) ToolCallContent {
	return ToolCallContent{Type: ToolContentTerminal, TerminalID: id}
}

func (c ToolCallContent) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case ToolContentContent:
		if c.Content == nil {
			return nil, errors.New("acp: tool call content of type content needs Content")
		}
		return json.Marshal(struct {
			Type    string       `json:"type"`
			Content ContentBlock `json:"content"`
			Meta    Meta         `json:"_meta,omitempty"`
		}{c.Type, *c.Content, c.Meta})
	case ToolContentDiff:
		if c.Path == "" {
			return nil, errors.New("acp: tool call content of type diff needs Path")
		}
		return json.Marshal(struct {
			Type    string  `json:"type"`
			Path    string  `json:"path"`
			OldText *string `json:"oldText"`
			NewText string  `json:"newText"`
			Meta    Meta    `json:"_meta,omitempty"`
		}{c.Type, c.Path, c.OldText, c.NewText, c.Meta})
	case ToolContentTerminal:
		if c.TerminalID == "" {
			return nil, errors.New("acp: tool call content of type terminal needs TerminalID")
		}
		return json.Marshal(struct {
			Type       string `json:"type"`
			TerminalID string `json:"terminalId"`
			Meta       Meta   `json:"_meta,omitempty"`
		}{c.Type, c.TerminalID, c.Meta})
	}
	return nil, fmt.Errorf("acp: tool call content type %q is not content, diff or terminal", c.Type)
}

// ToolCallLocation is a file a tool call reads or changes, for clients that
// follow the agent along.
type ToolCallLocation struct {
	Path string `json:"path"`           // absolute
	Line *int   `json:"line,omitempty"` // 1-based
	Meta Meta   `json:"_meta,omitempty"`
}

// ToolCallUpdate describes a tool call by its id plus the members that
// changed. It is the toolCall of session/request_permission; AsUpdate makes
// it a tool_call_update session update. A nil Content or Locations is left
// out (unchanged); a non-nil empty one is sent as [] (cleared).
type ToolCallUpdate struct {
	ToolCallID string             `json:"toolCallId"`
	Title      string             `json:"title,omitempty"`
	Name       string             `json:"name,omitempty"`
	Kind       ToolKind           `json:"kind,omitempty"`
	Status     ToolCallStatus     `json:"status,omitempty"`
	Content    []ToolCallContent  `json:"content,omitzero"`
	Locations  []ToolCallLocation `json:"locations,omitzero"`
	RawInput   json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput  json.RawMessage    `json:"rawOutput,omitempty"`
	Meta       Meta               `json:"_meta,omitempty"`
}

// AsUpdate is u as a tool_call_update session update.
func (u ToolCallUpdate) AsUpdate() SessionUpdate {
	return SessionUpdate{
		SessionUpdate: UpdateToolCallUpdate,
		ToolCallID:    u.ToolCallID,
		Title:         u.Title,
		Name:          u.Name,
		Kind:          u.Kind,
		Status:        string(u.Status),
		ToolContent:   u.Content,
		Locations:     u.Locations,
		RawInput:      u.RawInput,
		RawOutput:     u.RawOutput,
		Meta:          u.Meta,
	}
}

// sessionUpdateJSON is SessionUpdate on the wire. The field order keeps
// the bytes of the kinds sent before tool calls existed unchanged (golden
// transcripts pin them).
type sessionUpdateJSON struct {
	SessionUpdate     string             `json:"sessionUpdate"`
	ToolCallID        string             `json:"toolCallId,omitempty"`
	Content           any                `json:"content,omitempty"` // *ContentBlock or []ToolCallContent, encoded in place
	MessageID         string             `json:"messageId,omitempty"`
	Severity          string             `json:"severity,omitempty"`
	Title             *string            `json:"title,omitempty"`
	Description       string             `json:"description,omitempty"`
	Name              string             `json:"name,omitempty"`
	Kind              ToolKind           `json:"kind,omitempty"`
	CompactionID      string             `json:"compactionId,omitempty"`
	Status            string             `json:"status,omitempty"`
	Summary           []ContentBlock     `json:"summary,omitempty"`
	Error             string             `json:"error,omitempty"`
	Locations         []ToolCallLocation `json:"locations,omitzero"`
	RawInput          json.RawMessage    `json:"rawInput,omitempty"`
	RawOutput         json.RawMessage    `json:"rawOutput,omitempty"`
	UpdatedAt         string             `json:"updatedAt,omitempty"`
	CurrentModeID     string             `json:"currentModeId,omitempty"`
	ConfigOptions     []ConfigOption     `json:"configOptions,omitempty"`
	AvailableCommands []AvailableCommand `json:"availableCommands,omitempty"`
	Entries           []PlanEntry        `json:"entries,omitzero"`
	Used              *uint64            `json:"used,omitempty"`
	Size              *uint64            `json:"size,omitempty"`
	Cost              *Cost              `json:"cost,omitempty"`
	Meta              Meta               `json:"_meta,omitempty"`
}

// MarshalJSON writes the one "content" member from Content (chunks) or
// ToolContent (tool calls), and always writes a tool_call's title, which
// the schema requires.
func (u SessionUpdate) MarshalJSON() ([]byte, error) {
	w := sessionUpdateJSON{
		SessionUpdate:     u.SessionUpdate,
		ToolCallID:        u.ToolCallID,
		MessageID:         u.MessageID,
		Severity:          u.Severity,
		Description:       u.Description,
		Name:              u.Name,
		Kind:              u.Kind,
		CompactionID:      u.CompactionID,
		Status:            u.Status,
		Summary:           u.Summary,
		Error:             u.Error,
		Locations:         u.Locations,
		RawInput:          u.RawInput,
		RawOutput:         u.RawOutput,
		UpdatedAt:         u.UpdatedAt,
		CurrentModeID:     u.CurrentModeID,
		ConfigOptions:     u.ConfigOptions,
		AvailableCommands: u.AvailableCommands,
		Entries:           u.Entries,
		Cost:              u.Cost,
		Meta:              u.Meta,
	}
	if u.SessionUpdate == UpdateUsage {
		w.Used, w.Size = &u.Used, &u.Size
	}
	isTool := u.SessionUpdate == UpdateToolCall || u.SessionUpdate == UpdateToolCallUpdate
	if isTool && u.ToolCallID == "" {
		return nil, fmt.Errorf("acp: %s update needs ToolCallID", u.SessionUpdate)
	}
	if u.Title != "" || u.SessionUpdate == UpdateToolCall {
		w.Title = &u.Title
	}
	if u.SessionUpdate == UpdatePlan && w.Entries == nil {
		w.Entries = []PlanEntry{} // required by the schema
	}
	switch {
	case u.Content != nil && u.ToolContent != nil:
		return nil, fmt.Errorf("acp: %s update has both Content and ToolContent; they are both \"content\" on the wire", u.SessionUpdate)
	case u.Content != nil:
		w.Content = u.Content
	case u.ToolContent != nil:
		w.Content = u.ToolContent
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads "content" into Content when it is an object (chunks)
// and into ToolContent when it is an array (tool calls).
func (u *SessionUpdate) UnmarshalJSON(b []byte) error {
	var w sessionUpdateJSON
	var c struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return err
	}
	*u = SessionUpdate{
		SessionUpdate:     w.SessionUpdate,
		ToolCallID:        w.ToolCallID,
		MessageID:         w.MessageID,
		Severity:          w.Severity,
		Description:       w.Description,
		Name:              w.Name,
		Kind:              w.Kind,
		CompactionID:      w.CompactionID,
		Status:            w.Status,
		Summary:           w.Summary,
		Error:             w.Error,
		Locations:         w.Locations,
		RawInput:          w.RawInput,
		RawOutput:         w.RawOutput,
		UpdatedAt:         w.UpdatedAt,
		CurrentModeID:     w.CurrentModeID,
		ConfigOptions:     w.ConfigOptions,
		AvailableCommands: w.AvailableCommands,
		Entries:           w.Entries,
		Cost:              w.Cost,
		Meta:              w.Meta,
	}
	if w.Used != nil {
		u.Used = *w.Used
	}
	if w.Size != nil {
		u.Size = *w.Size
	}
	if w.Title != nil {
		u.Title = *w.Title
	}
	switch firstByte(c.Content) {
	case 0, 'n': // absent or null
	case '[':
		return json.Unmarshal(c.Content, &u.ToolContent)
	default:
		return json.Unmarshal(c.Content, &u.Content)
	}
	return nil
}

// firstByte is the first byte of a JSON value, 0 for none.
func firstByte(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}
