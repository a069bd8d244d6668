package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// The session methods beyond new, load and prompt.
var (
	_ acp.SessionLister  = (*Agent)(nil)
	_ acp.SessionResumer = (*Agent)(nil)
	_ acp.SessionCloser  = (*Agent)(nil)
	_ acp.SessionDeleter = (*Agent)(nil)
)

const (
	// ListPageSize is how many sessions a session/list page holds.
	ListPageSize = 100
	// PageSizeMetaKey in session/list's _meta asks for smaller pages (1 to
	// ListPageSize).
	PageSizeMetaKey = "rebound/pageSize"
)

// ListSessions lists the sessions of the state directory, most recently
// active first, from the session index (which reads a log only when it has
// no entry for it), a page at a time. A page after the first starts where
// its cursor points in the index's sorted list, so listing every session
// reads the state directory once, not once per page.
func (a *Agent) ListSessions(ctx context.Context, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	size, err := pageSize(req.Meta)
	if err != nil {
		return acp.ListSessionsResponse{}, err
	}
	after, err := decodeCursor(req.Cursor)
	if err != nil {
		return acp.ListSessionsResponse{}, err
	}
	cwd := ""
	if req.Cwd != "" {
		cwd = filepath.Clean(req.Cwd)
	}
	sums, more, err := a.store.index.Page(after, size, func(s session.Summary) bool {
		// A session without a turn has no title: a chat opened and
		// closed, or the one the editor has open now. A list of raw ids
		// helps nobody.
		return s.Title != "" && (cwd == "" || filepath.Clean(s.Cwd) == cwd)
	})
	if err != nil {
		return acp.ListSessionsResponse{}, &acp.RequestError{Code: acp.CodeInternalError, Err: err,
			Message: fmt.Sprintf("Rebound could not list its sessions: %v; %s", err, a.dir.stateDirHelp()),
			Data:    map[string]any{"reason": "session_list", "stateDir": a.cfg.StateDir}}
	}
	resp := acp.ListSessionsResponse{Sessions: make([]acp.SessionInfo, 0, len(sums))}
	for _, s := range sums {
		resp.Sessions = append(resp.Sessions, acp.SessionInfo{SessionID: s.SessionID, Cwd: s.Cwd, AdditionalDirectories: s.AdditionalDirectories,
			Title: s.Title, UpdatedAt: isoTime(s.UpdatedAt)})
	}
	if more {
		resp.NextCursor = encodeCursor(sums[len(sums)-1])
	}
	return resp, nil
}

// pageSize reads _meta["rebound/pageSize"].
func pageSize(meta acp.Meta) (int, error) {
	v, ok := meta[PageSizeMetaKey]
	if !ok || v == nil {
		return ListPageSize, nil
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) || f < 1 || f > ListPageSize {
		return 0, acp.NewInvalidParams("_meta[%q] must be an integer from 1 to %d", PageSizeMetaKey, ListPageSize)
	}
	return int(f), nil
}

// encodeCursor makes the nextCursor of a page that ended at s: its
// updatedAt and id, "2000-01-01T00:00:03Z/sess_…". Opaque to clients, but
// readable in a transcript. It names a place in the order, not an index,
// so sessions made or deleted meanwhile do not make the next page skip or
// repeat others.
func encodeCursor(s session.Summary) string {
	return s.UpdatedAt.UTC().Format(time.RFC3339Nano) + "/" + s.SessionID
}

// decodeCursor reads a nextCursor as the place in the list it names: a
// summary with only the session's updatedAt and id.
func decodeCursor(text string) (*session.Summary, error) {
	if text == "" {
		return nil, nil
	}
	at, id, ok := strings.Cut(text, "/")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || session.CheckSessionID(id) != nil {
		return nil, acp.NewInvalidParams("cursor %s is not a nextCursor this agent gave out", quote(text))
	}
	return &session.Summary{SessionID: id, UpdatedAt: t}, nil
}

// quote quotes a string the client sent, clipped, for an error message.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q… (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// isoTime formats a time as ISO 8601 in UTC with milliseconds, as
// JavaScript's Date.toISOString does; "" for the zero time.
func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// ResumeSession opens the session again, as LoadSession does, but replays
// nothing: the editor already shows the conversation.
func (a *Agent) ResumeSession(ctx context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	s, err := a.store.state(req.SessionID)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	s.turnMu.Lock()
	if err := a.store.acquire(s, false); err != nil {
		s.unlockTurn()
		return acp.ResumeSessionResponse{}, err
	}
	defer a.store.done(s)
	s.dirs.cwd, s.dirs.additional = req.Cwd, req.AdditionalDirectories
	a.mcp.restart(s, req.McpServers, a.store.whileOpen)
	a.cfg.Logger.Info().Str("session", s.id).Str("cwd", req.Cwd).Msg("session resumed")
	modes, opts := a.menu.sessionConfig(s)
	return acp.ResumeSessionResponse{Modes: modes, ConfigOptions: opts}, nil
}

// CloseSession frees what the session holds in this process: its log (the
// file; its lock is held only while a use writes) and its state. The acp server has cancelled and answered its running turn first.
// The session stays on disk; session/load or session/resume opens it
// again. A session this process does not hold is closed already.
func (a *Agent) CloseSession(ctx context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	s, err := a.store.holding(req.SessionID)
	if err != nil {
		return acp.CloseSessionResponse{}, err
	}
	if s == nil {
		if err := a.dir.exists(req.SessionID); err != nil {
			return acp.CloseSessionResponse{}, err
		}
		return acp.CloseSessionResponse{}, nil
	}
	s.turnMu.Lock() // a load or resume still running ends first
	defer s.unlockTurn()
	s.mcp.close()
	a.store.drop(s)
	a.cfg.Logger.Info().Str("session", s.id).Msg("session closed")
	return acp.CloseSessionResponse{}, nil
}

// DeleteSession removes the session: its log and its index entry. The acp
// server refuses it while a turn of the session runs; a session/load or
// session/resume still running makes it busy too. A session another
// Rebound process is writing (a turn runs there) is not deleted; one it
// only has open is, and that process finds it gone at its next use.
func (a *Agent) DeleteSession(ctx context.Context, req acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	id := req.SessionID
	s, err := a.store.holding(id)
	if err != nil {
		return acp.DeleteSessionResponse{}, err
	}
	if s != nil {
		if !s.turnMu.TryLock() {
			return acp.DeleteSessionResponse{}, &acp.RequestError{Code: acp.CodeSessionBusy,
				Message: "Session " + id + " is in use (a turn, session/load or session/resume is running); try again once it has been answered",
				Data:    map[string]any{"sessionId": id, "reason": "session_busy"}}
		}
		defer s.unlockTurn()
	}
	err = session.Remove(a.cfg.StateDir, id)
	if err != nil && s != nil && !errors.Is(err, session.ErrLocked) && !errors.Is(err, session.ErrNotFound) {
		// Where an open file can't be removed: let go of this process's
		// (the next use opens it again) and try once more.
		a.store.closeLog(s)
		err = session.Remove(a.cfg.StateDir, id)
	}
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		// Refused (another process is writing it) or failed: the session
		// is as it was, its MCP servers running.
		return acp.DeleteSessionResponse{}, a.dir.openError(id, err)
	}
	// Removed, here or by another process before: nothing of it is kept.
	if s != nil {
		s.mcp.close()
		a.store.closeLog(s)
		a.store.forget(s)
	}
	if err != nil {
		return acp.DeleteSessionResponse{}, a.dir.openError(id, err)
	}
	if err := a.store.index.Remove(id); err != nil {
		// The log is gone, and a list leaves out what has no log.
		a.cfg.Logger.Warn().Err(err).Str("session", id).Msg("session index")
	}
	a.cfg.Logger.Info().Str("session", id).Msg("session deleted")
	return acp.DeleteSessionResponse{}, nil
}

// summary is what the index keeps of s. Called with the log open, under
// s.turnMu.
func (s *sessionState) summary() session.Summary {
	sum := session.Summary{SessionID: s.id, Cwd: s.listing.home, Title: s.listing.title}
	if n := len(s.events); n > 0 {
		sum.UpdatedAt = s.events[n-1].Time
		if s.events[0].Type == session.TypeSessionStart {
			var start session.SessionStart
			if json.Unmarshal(s.events[0].Data, &start) == nil {
				sum.AdditionalDirectories = start.AdditionalDirectories
			}
		}
	}
	return sum
}

// firstPromptTitle makes a title from the session's first prompt.
func firstPromptTitle(events []session.Event) string {
	if d, ok := session.FirstTurnStart(events); ok {
		if typed, ok := typedCommand(d.Text); ok {
			return typed // what the user typed, not the instruction it ran
		}
		var blocks []acp.ContentBlock
		if json.Unmarshal(d.Prompt, &blocks) != nil {
			return session.ShortTitle(d.Text)
		}
		return promptTitle(blocks)
	}
	return ""
}

// promptTitle is the first line of the prompt's first text, shortened; a
// prompt without text is named after what it attached.
func promptTitle(blocks []acp.ContentBlock) string {
	for _, b := range blocks {
		if b.Type == "text" {
			if t := session.ShortTitle(b.Text); t != "" {
				return t
			}
		}
	}
	for _, b := range blocks {
		var name string
		switch {
		case b.Type == "resource_link":
			name = cmp.Or(b.Title, b.Name, path.Base(b.URI))
		case b.Type == "resource" && b.Resource != nil:
			name = path.Base(b.Resource.URI)
		}
		if t := session.ShortTitle(name); t != "" && t != "." && t != "/" {
			return t
		}
	}
	// Images only, or blanks: a session with a turn always has a title.
	return session.UntitledSession
}
