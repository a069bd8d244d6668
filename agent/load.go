package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/session"
)

// Loading a session: its committed conversation, the statuses of its waits
// (status.go), its last plan (plan.go) and usage (usage.go) are replayed to
// the editor before session/load is answered, from the log alone.

// LoadSession opens the session's log (or uses the open one), then replays
// the committed conversation before answering, as ACP requires. The replay
// is of what acquire read, kept in memory, and holds no lock of the log's:
// another process may run a turn meanwhile, whose records this one reads
// at its next use.
func (a *Agent) LoadSession(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
	s, err := a.store.state(req.SessionID)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	s.turnMu.Lock()
	if err := a.store.acquire(s, false); err != nil {
		s.unlockTurn()
		return acp.LoadSessionResponse{}, err
	}
	defer a.store.done(s)
	// The editor may load a session in another directory than the one it
	// was made in; tools work where the editor says.
	s.cwd, s.additionalDirs = req.Cwd, req.AdditionalDirectories
	a.restartMCP(s, req.McpServers)
	h, err := s.history()
	if err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	msgs := h.conv.Messages()
	var waits []session.WaitStatus
	if statusCallsFor(a.cfg.WaitStatus, c.Capabilities()) {
		waits = session.WaitStatuses(s.events)
	}
	modes, opts := a.menu.sessionConfig(s)
	err = replay(ctx, c, s.id, tools.NewWorkspace(s.cwd, s.additionalDirs...), msgs, waits)
	if err == nil {
		err = replayUsage(ctx, c, s.id, h)
	}
	return acp.LoadSessionResponse{Modes: modes, ConfigOptions: opts}, err
}

// replay sends the committed conversation of a loaded session, and the
// statuses of its waits (waits, nil for a client that is not shown them)
// where they happened.
func replay(ctx context.Context, c acp.Client, sessionID string, ws *tools.Workspace, msgs []session.Message, waits []session.WaitStatus) error {
	for _, m := range msgs {
		var err error
		if waits, err = replayStatuses(ctx, c, sessionID, waits, m.Seq); err != nil {
			return err
		}
		if isPlanUpdate(m) {
			continue
		}
		switch m.Role {
		case session.RoleUser:
			var blocks []acp.ContentBlock
			if err := json.Unmarshal(m.Prompt, &blocks); err != nil || len(blocks) == 0 {
				blocks = []acp.ContentBlock{acp.TextBlock(m.Text)}
			}
			if len(blocks) == 1 && blocks[0].Type == "text" {
				if typed, ok := typedCommand(blocks[0].Text); ok {
					blocks[0] = acp.TextBlock(typed)
				}
			}
			for i := range blocks {
				if blocks[i].Type == "text" && blocks[i].Text == "" {
					// An empty text block (some clients send one first)
					// shows nothing, and ACP's text block needs text.
					continue
				}
				if err := c.Update(ctx, sessionID, acp.UserMessageChunk(blocks[i])); err != nil {
					return err
				}
			}
		case session.RoleCompaction:
			if c.Capabilities().Compaction() {
				u := acp.CompactionCompleted(m.CompactionID, []acp.ContentBlock{acp.TextBlock(m.Text)})
				if m.Failed != "" { // as the editor was told when it failed
					u = acp.CompactionFailed(m.CompactionID, m.Failed)
				}
				if err := c.Update(ctx, sessionID, u); err != nil {
					return err
				}
			}
		case session.RoleAssistant:
			if m.Reasoning != "" {
				if err := sendChunk(ctx, c, sessionID, acp.UpdateAgentThoughtChunk, m.MessageID, m.Reasoning); err != nil {
					return err
				}
			}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				if err := sendChunk(ctx, c, sessionID, acp.UpdateAgentMessageChunk, m.MessageID, m.Text); err != nil {
					return err
				}
			}
		case session.RoleTool:
			if err := c.Update(ctx, sessionID, replayedToolCall(m, ws)); err != nil {
				return err
			}
		}
	}
	if _, err := replayStatuses(ctx, c, sessionID, waits, 0); err != nil {
		return err
	}
	return replayPlan(ctx, c, sessionID, msgs)
}

// replayedToolCall is a recorded tool call as the editor saw it last: its
// title and kind, its final status, and what it showed (a command's output
// as text, since its terminal is gone).
func replayedToolCall(m session.Message, ws *tools.Workspace) acp.SessionUpdate {
	u := acp.ToolCallUpdate{ToolCallID: shownCallID(m.ToolCallID), Title: m.ToolName, Name: m.ToolName,
		Kind: acp.ToolKindOther, Status: acp.ToolStatusFailed}.AsStart()
	if m.Status == session.ToolCompleted {
		u.Status = acp.ToolStatusCompleted
	}
	call := m.Call
	if call == nil {
		// Never dispatched: describe it from what the model asked.
		call = &session.ToolCall{Name: m.ToolName, Arguments: m.Arguments}
		if args, err := tools.Parse(m.ToolName, m.Arguments); err == nil {
			info := tools.Describe(ws, args)
			call.Title, call.Kind, call.Locations = info.Title, info.Kind, info.Locations
		}
	}
	u.Title, u.Kind, u.Locations, u.RawInput = cmp.Or(call.Title, call.Name), acp.ToolKind(cmp.Or(call.Kind, string(acp.ToolKindOther))), locations(call.Locations), shownInput(call.Name, call.Arguments)
	var content []acp.ToolCallContent
	if len(m.Content) == 0 || json.Unmarshal(m.Content, &content) != nil {
		content = []acp.ToolCallContent{acp.ContentText(m.Text)}
	}
	u.ToolContent = content
	return u
}
