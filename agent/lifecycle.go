package agent

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

const (
	// ListPageSize is how many sessions a session/list page holds.
	ListPageSize = 100
	// PageSizeMetaKey in session/list's _meta asks for smaller pages (1 to
	// ListPageSize).
	PageSizeMetaKey = "rebound/pageSize"
)

// sessionsAdded is what making a session needs of the sessions
// (sessionStore).
type sessionsAdded interface {
	// add holds s, whose log is l, and runs started once it does.
	add(s *sessionState, l *session.Log, started func()) error
	// putSummary puts a session in the index.
	putSummary(sum session.Summary)
}

// sessionMaker makes new sessions (session/new).
type sessionMaker struct {
	dir stateDir
	// version is recorded in the session/start, with the menu's default
	// model (Config.Model, or the one set up at sign-in, signin.go).
	version string
	store   sessionsAdded
	mcp     mcpStarter
	menu    *configMenu
	log     *zerolog.Logger
}

// create serves session/new (Agent.NewSession): it creates the session's
// log before answering, so a session the editor knows about always exists
// on disk. A session/new that fails leaves no log behind.
func (m sessionMaker) create(req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id := newID("sess_")
	start := session.SessionStart{SessionID: id, Cwd: req.Cwd, Model: m.menu.defaults().model, AgentVersion: m.version, AdditionalDirectories: req.AdditionalDirectories}
	log, err := session.Create(m.dir.path, id, start)
	if err != nil {
		return acp.NewSessionResponse{}, m.dir.createError(err)
	}
	discard := func() {
		log.Close()
		os.Remove(log.Path())
	}
	loaded, err := session.Load(log.Path())
	if err != nil {
		discard()
		return acp.NewSessionResponse{}, fmt.Errorf("read back session log: %w", err)
	}
	// Nothing more to write: another process may use the session at once.
	if err := log.Unlock(); err != nil {
		discard()
		return acp.NewSessionResponse{}, m.dir.createError(err)
	}
	s := &sessionState{
		id:           id,
		dirs:         sessionDirs{req.Cwd, req.AdditionalDirectories},
		conversation: conversation{events: loaded.Events, rules: session.PermissionRules(loaded.Events)},
		use:          logUse{loaded: true},
		listing:      sessionList{home: req.Cwd},
		options:      optionWriter{opts: m.menu.defaults()},
	}
	if err := m.store.add(s, log, func() { s.mcp = m.mcp.start(id, req.Cwd, req.McpServers) }); err != nil {
		discard()
		return acp.NewSessionResponse{}, err
	}
	m.store.putSummary(session.Summary{SessionID: id, Cwd: req.Cwd, AdditionalDirectories: req.AdditionalDirectories, UpdatedAt: loaded.Events[len(loaded.Events)-1].Time})
	m.log.Info().Str("session", id).Str("cwd", req.Cwd).Msg("session created")
	modes, opts := m.menu.sessionConfig(s)
	return acp.NewSessionResponse{SessionID: id, Modes: modes, ConfigOptions: opts}, nil
}

// summaryPages is the session index as a list reads it (session.Index).
type summaryPages interface {
	Page(after *session.Summary, n int, keep func(session.Summary) bool) ([]session.Summary, bool, error)
}

// listSessions serves session/list (Agent.ListSessions): the sessions of
// the state directory dir, most recently active first, from the session
// index (which reads a log only when it has no entry for it), a page at a
// time. A page after the first starts where its cursor points in the
// index's sorted list, so listing every session reads the state directory
// once, not once per page.
func listSessions(index summaryPages, dir stateDir, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
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
	sums, more, err := index.Page(after, size, func(s session.Summary) bool {
		// A session without a turn has no title: a chat opened and
		// closed, or the one the editor has open now. A list of raw ids
		// helps nobody.
		return s.Title != "" && (cwd == "" || filepath.Clean(s.Cwd) == cwd)
	})
	if err != nil {
		return acp.ListSessionsResponse{}, &acp.RequestError{Code: acp.CodeInternalError, Err: err,
			Message: fmt.Sprintf("Rebound could not list its sessions: %v; %s", err, dir.stateDirHelp()),
			Data:    map[string]any{"reason": "session_list", "stateDir": dir.path}}
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

// sessionUses is what opening a session for the editor needs of the
// sessions (sessionStore).
type sessionUses interface {
	// state is the session by id, held from now on; not found without a
	// log.
	state(id string) (*sessionState, error)
	// acquire opens (or reads again) s's log for a use, under s.turnMu;
	// done ends the use and lets go of turnMu.
	acquire(s *sessionState, write bool) error
	done(s *sessionState)
	// whileOpen runs f unless the agent has closed.
	whileOpen(f func()) bool
}

// sessionOpener opens a session for session/load and session/resume.
type sessionOpener struct {
	store sessionUses
	mcp   mcpStarter
	menu  *configMenu
	log   *zerolog.Logger
}

// open opens session id for a use in cwd and the other directories, with
// the MCP servers the editor named now. The caller ends the use (done).
func (o sessionOpener) open(id, cwd string, additional []string, servers []acp.McpServer) (*sessionState, error) {
	s, err := o.store.state(id)
	if err != nil {
		return nil, err
	}
	s.turnMu.Lock()
	if err := o.store.acquire(s, false); err != nil {
		s.unlockTurn()
		return nil, err
	}
	// The editor may open a session in another directory than the one it
	// was made in; tools work where the editor says.
	s.dirs.cwd, s.dirs.additional = cwd, additional
	o.mcp.restart(s, servers, o.store.whileOpen)
	return s, nil
}

// resume serves session/resume (Agent.ResumeSession): it opens the session
// again, as load does, but replays nothing: the editor already shows the
// conversation.
func (o sessionOpener) resume(req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	s, err := o.open(req.SessionID, req.Cwd, req.AdditionalDirectories, req.McpServers)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	defer o.store.done(s)
	o.log.Info().Str("session", s.id).Str("cwd", req.Cwd).Msg("session resumed")
	modes, opts := o.menu.sessionConfig(s)
	return acp.ResumeSessionResponse{Modes: modes, ConfigOptions: opts}, nil
}

// sessionsHeld is what closing and deleting a session needs of the
// sessions this process holds (sessionStore).
type sessionsHeld interface {
	// holding is the session this process holds by id, nil if none.
	holding(id string) (*sessionState, error)
	// drop closes s's log and forgets s; closeLog only closes the log, and
	// forget only forgets s.
	drop(s *sessionState)
	closeLog(s *sessionState)
	forget(s *sessionState)
}

// sessionRemover closes and deletes sessions (session/close, delete).
type sessionRemover struct {
	store sessionsHeld
	// index is the session index, which a deleted session leaves.
	index interface{ Remove(id string) error }
	dir   stateDir
	log   *zerolog.Logger
}

// close serves session/close (Agent.CloseSession): it frees what the
// session holds in this process: its log (the file; its lock is held only
// while a use writes) and its state. The acp server has cancelled and
// answered its running turn first. The session stays on disk;
// session/load or session/resume opens it again. A session this process
// does not hold is closed already.
func (r sessionRemover) close(id string) error {
	s, err := r.store.holding(id)
	if err != nil {
		return err
	}
	if s == nil {
		return r.dir.exists(id)
	}
	s.turnMu.Lock() // a load or resume still running ends first
	defer s.unlockTurn()
	s.mcp.close()
	r.store.drop(s)
	r.log.Info().Str("session", s.id).Msg("session closed")
	return nil
}

// delete serves session/delete (Agent.DeleteSession): it removes the
// session: its log and its index entry. The acp server refuses it while a
// turn of the session runs; a session/load or session/resume still running
// makes it busy too. A session another Rebound process is writing (a turn
// runs there) is not deleted; one it only has open is, and that process
// finds it gone at its next use.
func (r sessionRemover) delete(id string) error {
	s, err := r.store.holding(id)
	if err != nil {
		return err
	}
	if s != nil {
		if !s.turnMu.TryLock() {
			return &acp.RequestError{Code: acp.CodeSessionBusy,
				Message: "Session " + id + " is in use (a turn, session/load or session/resume is running); try again once it has been answered",
				Data:    map[string]any{"sessionId": id, "reason": "session_busy"}}
		}
		defer s.unlockTurn()
	}
	err = session.Remove(r.dir.path, id)
	if err != nil && s != nil && !errors.Is(err, session.ErrLocked) && !errors.Is(err, session.ErrNotFound) {
		// Where an open file can't be removed: let go of this process's
		// (the next use opens it again) and try once more.
		r.store.closeLog(s)
		err = session.Remove(r.dir.path, id)
	}
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		// Refused (another process is writing it) or failed: the session
		// is as it was, its MCP servers running.
		return r.dir.openError(id, err)
	}
	// Removed, here or by another process before: nothing of it is kept.
	if s != nil {
		s.mcp.close()
		r.store.closeLog(s)
		r.store.forget(s)
	}
	if err != nil {
		return r.dir.openError(id, err)
	}
	if err := r.index.Remove(id); err != nil {
		// The log is gone, and a list leaves out what has no log.
		r.log.Warn().Err(err).Str("session", id).Msg("session index")
	}
	r.log.Info().Str("session", id).Msg("session deleted")
	return nil
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
