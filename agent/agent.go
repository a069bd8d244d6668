package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Config is what an Agent needs; cmd/rebound fills it from the user's
// configuration.
type Config struct {
	StateDir string
	// StateDirHelp says where StateDir came from and what to do when it
	// cannot be written (config.Config.StateDirHelp); empty names every
	// place it can be set.
	StateDirHelp string
	Model        string
	MaxTokens    int
	// Provider starts attempts. Nil means no API key was found at start-up:
	// a turn then asks NewProvider, and fails with auth required, naming
	// APIKeyEnv and the sign-in method, while there is still none (auth.go).
	Provider  llm.Provider
	APIKeyEnv string
	// NewProvider, when set, makes a provider from the API key found now
	// (the environment, then the key `rebound login` stored): nil and no
	// error while there is none, an error when the stored key can't be used.
	// It is asked by a turn that has no provider and by authenticate, so a
	// key stored after start-up is used without a restart.
	NewProvider func() (llm.Provider, error)
	Recovery    recovery.Config
	// Truncation and Overflow configure the recoveries that change the
	// request, which the agent carries out.
	Truncation recovery.Truncation
	Overflow   Overflow
	// Live sends each chunk as it arrives (recorded first); otherwise a
	// step's reply is held back until it has finished.
	Live bool
	// MaxRequests bounds the logical model requests of one turn (the
	// config's agent.max_steps); the turn then stops with max_turn_requests.
	MaxRequests int
	Tools       Tools
	// Instructions are added to the built-in system prompt, or replace it
	// when ReplaceInstructions is set.
	Instructions        string
	ReplaceInstructions bool
	// DefaultMode is the mode of a session with none recorded (one of
	// Modes); "" means DefaultMode.
	DefaultMode string
	// WaitStatus chooses how waits and give-ups are shown (one of
	// WaitStatuses); "" means WaitStatusAuto.
	WaitStatus string
	// Models are offered for the session's model when the provider gives
	// no list of its own.
	Models []string
	// ReasoningEffort is the reasoning effort of a session nobody chose one
	// for ("" lets the provider decide); setting it also offers the choice
	// for models llm.TakesReasoningEffort does not know.
	ReasoningEffort string
	// ContextWindow, when not 0, is the model's context window in tokens
	// for usage_update (else the window table in usage.go); Prices, when
	// set, price the steps whose provider billed no cost of its own.
	ContextWindow uint64
	Prices        Prices
	// MCPConnect, when set, connects every MCP server instead of its own
	// transport (tests serve them in process).
	MCPConnect func(context.Context, mcp.Spec) (mcp.Transport, error)
	Version    string
	Logger     zerolog.Logger
	// MaxOpenLogs bounds the session logs held open at once, each with a
	// file descriptor and the session's events in memory; past it, the
	// least recently used idle one is closed. 0 means DefaultMaxOpenLogs.
	MaxOpenLogs int
	// LogIdleTimeout closes a session's log once the session has been idle
	// this long, which frees its file descriptor and events. The log's lock
	// is let go of at the end of every use anyway, so another Rebound
	// process (another editor window) may use the session at any time.
	// 0 means DefaultLogIdleTimeout; negative, never.
	LogIdleTimeout time.Duration
	// Secrets, when set, is what commands run on this machine and stdio MCP
	// servers must not inherit from Rebound's environment: the API key and
	// the variable holding it. Asked at each start, as the key in use may
	// change. Nil leaves out APIKeyEnv.
	Secrets func() proc.Secrets
}

// Tools configures the tools the model may call.
type Tools struct {
	CommandTimeout    time.Duration // run_command's default timeout
	MaxCommandTimeout time.Duration // the most a call may ask for
	OutputLimit       int           // bytes of command output kept (head and tail)
}

// Overflow configures compaction on CONTEXT_OVERFLOW (enabled in
// recovery.Config.Overflow).
type Overflow struct {
	KeepRecentMessages int // history messages kept verbatim before the prompt
	// CompactAt, in (0, 1], compacts before a request once the last one's
	// usage reached that fraction of the model's window (autocompact.go);
	// 0 never does.
	CompactAt float64
}

// Agent implements acp.Agent.
type Agent struct {
	cfg Config

	// index lists the sessions of the state directory (session/list).
	index *session.Index
	// auth is the sign-in: the provider a turn uses (auth.go).
	auth *signIn

	mu       sync.Mutex
	sessions map[string]*sessionState
	// logs bounds the sessions' open logs (under mu).
	logs   *logCache[*sessionState]
	closed bool

	catalog *catalog    // the provider's models
	menu    *configMenu // what the sessions' configuration options offer
}

var _ acp.Agent = (*Agent)(nil)

// sessionState is one session this process knows. turnMu serialises turns
// and loads; the acp server already refuses a second concurrent prompt, this
// keeps the log consistent even if another caller does not.
//
// The log is open only while the session is in use or recently used: a
// turn or load acquires it (opening the log again if it was closed) and
// releases it. Another Rebound process may use the session too, one writer
// at a time: a use that writes (a turn, an option's change) holds the log's
// lock from acquire to release; a load or resume holds it only while it
// reads (and repairs) the log. Every acquire first reads what the others
// appended. A released log is closed after LogIdleTimeout, or sooner when
// more than MaxOpenLogs are open.
type sessionState struct {
	id string

	// Used under turnMu.
	turnMu         useMutex
	cwd            string
	additionalDirs []string
	events         []session.Event   // everything appended or loaded, in order; nil while the log is closed
	rules          map[string]string // standing permission answers by scope, from the log
	// hist is derived from events and kept up to date with them, so a
	// prompt never derives the conversation from the whole log again; nil
	// until first needed after the log was (re)read (see history).
	hist *history
	// reqBuf is the messages of the session's last request, reused by the
	// next (turn.request): a long session's history is thousands of
	// messages, and a fresh slice of them for each request costs more than
	// the rest of the work before it.
	reqBuf []llm.Message
	// toolIDs are the tool call ids the session has used, made from the log
	// on first need and kept with it; nil until then.
	toolIDs map[string]bool
	// reload makes the next acquire close the log and read it again: a
	// turn panicked, and memory may not match the file.
	reload bool
	// locked is set from an acquire that took the log's lock to its
	// release: only then is the log written.
	locked bool
	// loaded is set once the log was opened in this process.
	loaded bool
	// What a list of sessions shows (session.Summary), kept while the log
	// is open: the cwd of its session/start, its title, and whether that
	// title was recorded (else it was made from the first prompt, and the
	// next turn/end records one).
	home   string
	title  string
	titled bool

	// optMu guards opts, writer, written and free (options.go), and puts
	// the records setOption writes through a use in order with the use's
	// own (record).
	optMu sync.Mutex
	// opts are the options the log records: changed only by reading the
	// log (loadOptions), or by commitOption once its record is synced.
	opts options
	// writer is set while a use of this process holds the log's lock and
	// may write (from acquire to done): an option is then changed through
	// it (setOption), during a turn too.
	writer bool
	// written are the records setOption wrote through the writer, not yet
	// in events: the writer takes them at its next record, or at done.
	written []pendingEvent
	// free, once made, is closed when turnMu is let go of or a use becomes
	// the writer: what a waiting setOption waits for.
	free chan struct{}

	// mcp are the session's MCP servers, replaced by a load or resume.
	// Used under turnMu.
	mcp *mcpServers
	// fullTurn is the last turn that compacted because the context was
	// nearly full, or tried to (autocompact.go). Used under turnMu.
	fullTurn int

	// log is nil while closed: set and cleared under Agent.mu, closed
	// when idle as Agent.logs decides.
	log *session.Log
}

// useMutex is sessionState.turnMu. It has no Unlock of its own:
// sessionState.unlockTurn lets go of it and wakes the setOption calls
// waiting for the session.
type useMutex struct{ mu sync.Mutex }

func (m *useMutex) Lock()         { m.mu.Lock() }
func (m *useMutex) TryLock() bool { return m.mu.TryLock() }

// unlockTurn lets go of turnMu and wakes the setOption calls waiting for it.
func (s *sessionState) unlockTurn() {
	s.optMu.Lock()
	defer s.optMu.Unlock()
	s.turnMu.mu.Unlock()
	s.wakeLocked()
}

// wakeLocked wakes the setOption calls waiting on free. Under optMu.
func (s *sessionState) wakeLocked() {
	if s.free != nil {
		close(s.free)
		s.free = nil
	}
}

// New returns an agent; zero limits in cfg get their defaults.
func New(cfg Config) *Agent {
	cfg.MaxRequests = cmp.Or(cfg.MaxRequests, DefaultMaxRequests)
	cfg.Tools.CommandTimeout = cmp.Or(cfg.Tools.CommandTimeout, DefaultCommandTimeout)
	cfg.Tools.MaxCommandTimeout = max(cmp.Or(cfg.Tools.MaxCommandTimeout, DefaultMaxCommandTimeout), cfg.Tools.CommandTimeout)
	cfg.Tools.OutputLimit = cmp.Or(cfg.Tools.OutputLimit, DefaultOutputLimit)
	cfg.MaxOpenLogs = max(cmp.Or(cfg.MaxOpenLogs, DefaultMaxOpenLogs), 1)
	cfg.LogIdleTimeout = cmp.Or(cfg.LogIdleTimeout, DefaultLogIdleTimeout)
	a := &Agent{cfg: cfg, sessions: make(map[string]*sessionState)}
	a.auth = newSignIn(&a.cfg)
	a.catalog = &catalog{provider: a.auth.current, model: cfg.Model, fallback: cfg.Models, log: &a.cfg.Logger}
	a.menu = &configMenu{mode: cfg.DefaultMode, model: cfg.Model, effort: cfg.ReasoningEffort, models: a.catalog}
	a.logs = newLogCache(&a.mu, cfg.MaxOpenLogs, cfg.LogIdleTimeout, a.closeLocked)
	a.index = session.NewIndex(cfg.StateDir, func(err error) {
		a.cfg.Logger.Warn().Err(err).Msg("session index")
	})
	return a
}

// Defaults of the agent loop and its tools.
const (
	DefaultMaxRequests       = 50
	DefaultCommandTimeout    = 2 * time.Minute
	DefaultMaxCommandTimeout = 30 * time.Minute
	DefaultOutputLimit       = 64 << 10
	DefaultMaxOpenLogs       = 64
	DefaultLogIdleTimeout    = time.Minute
)

// NewSession creates the session's log before answering, so a session the
// editor knows about always exists on disk. A session/new that fails leaves
// no log behind.
func (a *Agent) NewSession(ctx context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id := newID("sess_")
	start := session.SessionStart{SessionID: id, Cwd: req.Cwd, Model: a.cfg.Model, AgentVersion: a.cfg.Version}
	log, err := session.Create(a.cfg.StateDir, id, start)
	if err != nil {
		return acp.NewSessionResponse{}, a.createError(err)
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
		return acp.NewSessionResponse{}, a.createError(err)
	}
	s := &sessionState{id: id, cwd: req.Cwd, additionalDirs: req.AdditionalDirectories, loaded: true,
		events: loaded.Events, rules: session.PermissionRules(loaded.Events), home: req.Cwd, opts: a.menu.defaults()}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		discard()
		return acp.NewSessionResponse{}, errAgentClosed
	}
	s.mcp = a.startMCP(id, req.Cwd, req.McpServers)
	a.sessions[id] = s
	s.log = log
	a.logs.opened(s)
	a.logs.release(s)
	a.mu.Unlock()
	a.putSummary(session.Summary{SessionID: id, Cwd: req.Cwd, UpdatedAt: loaded.Events[len(loaded.Events)-1].Time})
	a.cfg.Logger.Info().Str("session", id).Str("cwd", req.Cwd).Msg("session created")
	modes, opts := a.menu.sessionConfig(s)
	return acp.NewSessionResponse{SessionID: id, Modes: modes, ConfigOptions: opts}, nil
}

var errAgentClosed = &acp.RequestError{Code: acp.CodeInternalError, Message: "Rebound is shutting down"}

// state returns the session's state, making an empty one (its log not yet
// opened) for a session this process has not seen.
func (a *Agent) state(id string) (*sessionState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed
	}
	s, ok := a.sessions[id]
	if !ok {
		s = &sessionState{id: id}
		a.sessions[id] = s
	}
	return s, nil
}

// acquire makes the session's log open and its events up to date for the
// caller, who holds s.turnMu, until release. A closed log is opened again.
// Then the log's lock is taken, and what another process appended since
// this one last read the log is read (the whole log again if it changed
// otherwise): with write set (a turn, an option) a lock held elsewhere
// fails the use with -32003, and a lock taken is held until release (the
// use is then the writer, s.writer); without (a load, a resume) the log is
// then read without it, and nothing is written. With the lock, a turn a
// dead process left open is closed; without write, the lock is then let
// go of before acquire returns. A log broken by a failed write (a full
// disk) is closed and opened again, which repairs its tail: a session
// recovers once the disk does.
func (a *Agent) acquire(s *sessionState, write bool) (err error) {
	l, err := a.use(s)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			a.release(s)
		}
	}()
	l, why := a.dropBroken(s, l)
	if l == nil {
		if l, err = a.reopen(s); err != nil {
			return err
		}
	}
	up, err := a.lockLog(s, l, write)
	if err != nil {
		return err
	}
	changed := a.take(s, l, up) // what the others appended
	if s.locked && up.OpenTurn != 0 {
		if err := a.repairInterrupted(s, l, up, why); err != nil {
			return err
		}
	}
	if changed {
		// The index may be behind the log: its writer may have died, or
		// been a Rebound without an index.
		a.putSummary(s.summary())
	}
	return a.becomeUser(s, l, write)
}

// use marks s in use until release, so its log is not closed under it,
// and returns the log if it is open.
func (a *Agent) use(s *sessionState) (*session.Log, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, errAgentClosed
	}
	a.logs.use(s)
	return s.log, nil
}

// dropBroken closes s's open log l when memory may not match the file (a
// turn panicked: s.reload) or a write failed (a full disk): reading it
// again repairs its tail. It returns l, or nil once closed, with what ended
// the turn this process left open when it did.
func (a *Agent) dropBroken(s *sessionState, l *session.Log) (*session.Log, []byte) {
	reload := s.reload
	s.reload = false
	if l == nil || (!reload && l.Err() == nil) {
		return l, nil
	}
	why := panicFailure
	if werr := l.Err(); werr != nil {
		a.cfg.Logger.Warn().Err(werr).Str("session", s.id).Msg("reopening a session log after a failed write")
		why = mustJSON(recovery.Failure{Code: recovery.Aborted, Message: "this turn could not be recorded: " + werr.Error()})
	}
	a.mu.Lock()
	a.closeLocked(s)
	a.mu.Unlock()
	return nil, why
}

// reopen opens s's log, closed or never opened, and reads all of it.
func (a *Agent) reopen(s *sessionState) (*session.Log, error) {
	log, loaded, err := session.OpenShared(a.cfg.StateDir, s.id)
	if err != nil {
		if !s.loaded {
			a.forget(s)
		}
		return nil, a.openError(s.id, err)
	}
	s.loaded = true
	a.take(s, log, loaded)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		log.Close()
		return nil, errAgentClosed
	}
	if _, ok := a.sessions[s.id]; !ok {
		a.sessions[s.id] = s // forgotten by a load that failed meanwhile
	}
	s.log = log
	a.logs.opened(s)
	a.mu.Unlock()
	return log, nil
}

// lockLog takes the lock of s's log l, so no other process writes it, and
// reads what they appended: s.locked says whether it was taken. With write,
// a lock held elsewhere fails the use; without, what the writer has written
// whole is read without the lock. A log removed by another process, or
// unreadable now, is closed: the next use opens it afresh, or finds it gone.
func (a *Agent) lockLog(s *sessionState, l *session.Log, write bool) (*session.Loaded, error) {
	up, err := l.Lock()
	s.locked = err == nil
	if !write && errors.Is(err, session.ErrLocked) {
		up, err = l.Refresh()
	}
	if err == nil {
		return up, nil
	}
	if !errors.Is(err, session.ErrLocked) {
		a.mu.Lock()
		a.closeLocked(s)
		a.mu.Unlock()
		if errors.Is(err, session.ErrNotFound) {
			s.mcp.close()
			a.forget(s)
		}
	}
	return nil, a.openError(s.id, err)
}

// repairInterrupted closes the turn up found open: the process that ran it
// died mid-turn (or this one could not record its end: why). Called with
// the lock held, so nobody else is running it; closing it keeps the log's
// invariant, and the next turn can start.
func (a *Agent) repairInterrupted(s *sessionState, l *session.Log, up *session.Loaded, why []byte) error {
	shown, warnings, err := session.ReadShown(l.Path())
	for _, w := range warnings {
		a.cfg.Logger.Warn().Str("session", s.id).Msg(w)
	}
	if err != nil {
		// What the user saw may be lost; the turn is closed anyway.
		a.cfg.Logger.Error().Err(err).Str("session", s.id).Msg("could not read the text shown of the interrupted turn")
	}
	if err := s.closeInterrupted(up, why, shown); err != nil {
		return a.logError(s.id, fmt.Errorf("close interrupted turn %d of session %s: %w", up.OpenTurn, s.id, err))
	}
	if err := l.ClearShown(); err != nil {
		a.cfg.Logger.Warn().Err(err).Str("session", s.id).Msg("could not empty the shown journal")
	}
	a.cfg.Logger.Warn().Str("session", s.id).Int("turn", up.OpenTurn).Msg("closed a turn left open")
	return nil
}

// becomeUser ends acquire. A load or resume writes nothing more: what it
// replays is what was read under the lock (whole and repaired, no writer
// midway), now in memory, so the lock is let go of at once, and an editor
// slow to read the replay keeps no other process from writing the session.
// A use that holds the lock is the writer, which a waiting setOption
// writes through.
func (a *Agent) becomeUser(s *sessionState, l *session.Log, write bool) error {
	if s.locked && !write {
		err := l.Unlock()
		s.locked = false
		if err != nil {
			return a.logError(s.id, fmt.Errorf("let go of session %s: %w", s.id, err))
		}
	}
	s.optMu.Lock()
	s.writer = s.locked
	s.wakeLocked()
	s.optMu.Unlock()
	return nil
}

// take brings what s keeps of its log up to date with what was read from
// it (all of it, or what others appended: Loaded.Tail): the events and
// what is derived from them, the permission rules, options, tool call ids
// and title. It reports whether anything was read. Called under s.turnMu.
func (a *Agent) take(s *sessionState, l *session.Log, ld *session.Loaded) bool {
	for _, w := range ld.Warnings {
		a.cfg.Logger.Warn().Str("session", s.id).Str("path", l.Path()).Msg(w)
	}
	if ld.Tail && len(ld.Events) == 0 {
		return false
	}
	if !ld.Tail {
		s.events, s.hist = ld.Events, nil
		if len(ld.Data) == len(ld.Events) {
			// Derived now, from what the read decoded: nothing is decoded
			// twice. A log the derivation refuses is derived again when
			// next needed, which says what is wrong.
			h := newHistory()
			h.grow(ld.Events)
			for i, ev := range ld.Events {
				if h.add(ev, ld.Data[i]) != nil {
					h = nil
					break
				}
			}
			s.hist = h
		}
		ld.Data = nil
		s.rules, s.toolIDs = session.PermissionRules(s.events), nil
		a.loadOptions(s)
		sum, titled := session.Summarize(s.events)
		s.home, s.title, s.titled = sum.Cwd, sum.Title, titled
		return true
	}
	// Another process appended: what is derived goes on from the tail.
	s.events = append(s.events, ld.Events...)
	for i, ev := range ld.Events {
		var data any
		if len(ld.Data) == len(ld.Events) {
			data = ld.Data[i]
		}
		s.extend(ev, data)
	}
	ld.Data = nil
	if s.rules == nil {
		s.rules = map[string]string{}
	}
	maps.Copy(s.rules, session.PermissionRules(ld.Events)) // the last answer for a scope wins
	if s.toolIDs != nil {
		for _, ev := range ld.Events {
			var m session.AssistantMessage
			if ev.Type == session.TypeAssistantMessage && session.Unmarshal(ev.Data, &m) == nil {
				for _, c := range m.ToolCalls {
					s.toolIDs[c.ID] = true
				}
			}
		}
	}
	a.loadOptions(s)
	// The title is the last one recorded, else made from the first prompt.
	if sum, titled := session.Summarize(ld.Events); titled {
		s.title, s.titled = sum.Title, true
	} else if !s.titled {
		// Rare: the session's first turn never recorded a title.
		sum, _ := session.Summarize(s.events)
		s.title = sum.Title
	}
	return true
}

// forget drops a session whose log was never opened (a session/load of a
// session that does not exist, or can't be read).
func (a *Agent) forget(s *sessionState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
}

// closeLocked closes s's log and forgets its events until the next acquire
// reads them again. Called under a.mu; a.logs calls it for a session not
// in use, once it has let go of it.
func (a *Agent) closeLocked(s *sessionState) {
	a.logs.closed(s)
	if err := s.closeLog(); err != nil {
		a.cfg.Logger.Warn().Err(err).Str("session", s.id).Msg("closing a session log failed")
	}
}

// closeLog closes s's log, if open, and forgets its events. Under
// Agent.mu.
func (s *sessionState) closeLog() error {
	if s.log == nil {
		return nil
	}
	err := s.log.Close()
	s.log = nil
	s.events, s.rules, s.toolIDs, s.hist, s.reqBuf = nil, nil, nil, nil, nil
	return err
}

// release ends a use that acquire began: what was appended is written and
// synced and the lock let go of, so another process may write the session;
// the log stays open for the next prompt until it has been idle for
// LogIdleTimeout.
func (a *Agent) release(s *sessionState) {
	a.mu.Lock()
	l := s.log
	a.mu.Unlock()
	if l != nil && s.locked {
		// Outside a.mu: Unlock syncs the file.
		if err := l.Unlock(); err != nil {
			a.cfg.Logger.Warn().Err(err).Str("session", s.id).Msg("writing the session log before letting go of it failed")
		}
	}
	s.locked = false
	a.mu.Lock()
	defer a.mu.Unlock()
	a.logs.release(s)
}

// openError is what the editor is told when a session's log can't be
// opened.
func (a *Agent) openError(id string, err error) error {
	if errors.Is(err, session.ErrNotFound) {
		return acp.NewSessionNotFound(id)
	}
	if le, ok := errors.AsType[*session.LockedError](err); ok {
		msg := "Session " + id + " is in use in another Rebound process"
		if le.PID > 0 {
			msg += fmt.Sprintf(" (pid %d)", le.PID)
		}
		msg += ", perhaps in another editor window: a turn is running there; try again once it has finished, or cancel it there"
		data := map[string]any{"sessionId": id, "reason": "session_locked", "path": le.Path}
		if le.PID > 0 {
			data["pid"] = le.PID
		}
		return &acp.RequestError{Code: acp.CodeSessionBusy, Message: msg + ".", Data: data, Err: err}
	}
	if _, ok := errors.AsType[*session.WriteError](err); ok {
		return a.logError(id, err)
	}
	return fmt.Errorf("open session %s: %w", id, err)
}

// stateDirHelp says where the state directory came from and what to do
// about it: config.Config.StateDirHelp when the agent was given it (it
// names the one source the user chose, or the default), else every place
// it can be set.
func (a *Agent) stateDirHelp() string {
	if a.cfg.StateDirHelp != "" {
		return a.cfg.StateDirHelp
	}
	return "the state directory " + a.cfg.StateDir + " is set by --state-dir, REBOUND_STATE_DIR or state_dir in the config file: make it writable, or choose another"
}

// createError is what the editor is told when a new session's log can't be
// created: the setting that chose the directory, and what to do.
func (a *Agent) createError(err error) error {
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok {
		return fmt.Errorf("create session log: %w", err)
	}
	advice := a.stateDirHelp() + "."
	if specific := writeAdvice(err); specific != "" && !notWritable(err) {
		advice = specific + " (" + a.stateDirHelp() + ")."
	}
	return &acp.RequestError{Code: acp.CodeInternalError, Message: we.Error() + "; " + advice, Err: err,
		Data: map[string]any{"reason": "session_log_create", "path": we.Path, "stateDir": a.cfg.StateDir}}
}

// logError is what the editor is told when the session log fails: a write
// that failed (a full disk) is Rebound's own failure, named with its path
// and what to do, and never a provider's. Other log errors are internal.
func (a *Agent) logError(id string, err error) error {
	if re, ok := errors.AsType[*acp.RequestError](err); ok {
		return re
	}
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok {
		return &acp.RequestError{Code: acp.CodeInternalError, Message: "Rebound could not record this in its session log: " + err.Error(), Err: err,
			Data: map[string]any{"sessionId": id, "reason": "session_log"}}
	}
	advice := writeAdvice(err)
	switch {
	case notWritable(err):
		advice = a.stateDirHelp()
	case advice == "":
		advice = "check the disk and try again; " + a.stateDirHelp()
	}
	return &acp.RequestError{Code: acp.CodeInternalError, Message: we.Error() + "; " + advice + "; the session recovers with the next prompt.", Err: err,
		Data: map[string]any{"sessionId": id, "reason": "session_log_write", "path": we.Path}}
}

// writeAdvice says what to do about a failed write, when the cause says.
func writeAdvice(err error) string {
	switch {
	case diskFull(err):
		return "free disk space and try again"
	case errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE):
		return "Rebound has too many files open: raise the open-file limit (ulimit -n) it is started with, or close other programs, and try again"
	}
	return ""
}

func notWritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

var (
	interruptedFailure = []byte(`{"code":"ABORTED","message":"the agent process ended during this turn"}`)
	panicFailure       = []byte(`{"code":"ABORTED","message":"Rebound hit an internal error during this turn"}`)
)

// closeInterrupted ends the step and turn a dead process left open, commits
// the reply it was showing (from the shown journal, or the log's chunks in
// an older log), and gives every tool call without a result one
// saying it was interrupted (it may or may not have run), so the log keeps
// its invariants, the next request to the model is valid, and the next turn
// can start. why is the failure recorded, when this process knows better
// than "the process ended".
func (s *sessionState) closeInterrupted(ld *session.Loaded, why []byte, shown []session.ShownChunk) error {
	turn := ld.OpenTurn
	failure := interruptedFailure
	if why != nil {
		failure = why
	}
	if ld.OpenStep != 0 {
		if _, err := s.append(session.TypeStepEnd, session.StepEnd{
			Turn: turn, Step: ld.OpenStep, Outcome: session.OutcomeFailed, Failure: failure,
		}); err != nil {
			return err
		}
	}
	// Live mode: what the user saw of the reply stays, as it does when a
	// live process fails or is cancelled.
	if u, ok := session.UnfinishedShown(s.events, s.id, shown); ok {
		if _, err := s.append(session.TypeAssistantMessage, session.AssistantMessage{
			Turn: turn, Step: ld.LastStep, MessageID: u.MessageID, Text: u.Text, Reasoning: u.Reasoning, Incomplete: true,
		}); err != nil {
			return err
		}
	}
	for _, id := range ld.PendingToolCalls {
		if _, err := s.append(session.TypeToolResult, session.ToolResult{Turn: turn, ToolCallID: id, Status: session.ToolAborted,
			Output: "Interrupted: the agent process ended while this tool call was pending; it may or may not have run. Check before repeating it."}); err != nil {
			return err
		}
	}
	_, err := s.appendSync(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Error: failure, Interrupted: true})
	return err
}

// held fails unless s is still the session this process holds by its id:
// it may have been closed or deleted, or the agent shut down, meanwhile.
func (a *Agent) held(s *sessionState) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errAgentClosed
	}
	if a.sessions[s.id] != s {
		return acp.NewSessionNotFound(s.id)
	}
	return nil
}

func (a *Agent) lookup(id string) (*sessionState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return nil, acp.NewSessionNotFound(id)
	}
	return s, nil
}

// Close closes every open session log.
func (a *Agent) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	var errs []error
	var stopping sync.WaitGroup
	defer stopping.Wait() // no server process outlives the agent
	for id, s := range a.sessions {
		stopping.Go(s.mcp.close)
		if s.log != nil {
			errs = append(errs, s.log.Close())
			s.log = nil
		}
		delete(a.sessions, id)
	}
	a.logs.reset()
	return errors.Join(errs...)
}

// recordError marks a failure of the session log (its write, or its rules
// refusing an event), so it is never taken for the provider's.
type recordError struct{ err error }

func (e *recordError) Error() string { return e.err.Error() }
func (e *recordError) Unwrap() error { return e.err }

func (s *sessionState) append(typ string, data any) (session.Event, error) {
	return s.record(typ, data, false)
}

func (s *sessionState) appendSync(typ string, data any) (session.Event, error) {
	return s.record(typ, data, true)
}

// record appends an event of the use that holds s (turnMu) to the log and
// to events. Under optMu, so that the records setOption wrote through
// this use meanwhile come first in events, as they do in the file.
func (s *sessionState) record(typ string, data any, sync bool) (session.Event, error) {
	s.optMu.Lock()
	var ev session.Event
	var err error
	if sync {
		ev, err = s.log.AppendSync(typ, data)
	} else {
		ev, err = s.log.Append(typ, data)
	}
	written := s.written
	s.written = nil
	s.optMu.Unlock()
	s.takeWritten(written)
	if err != nil {
		return ev, &recordError{err}
	}
	s.events = append(s.events, ev)
	s.extend(ev, data)
	return ev, nil
}

// pendingEvent is a record setOption wrote, with the data it was made of.
type pendingEvent struct {
	ev   session.Event
	data any
}

// takeWritten adds the records setOption wrote to events. Called by the
// holder of turnMu.
func (s *sessionState) takeWritten(written []pendingEvent) {
	for _, w := range written {
		s.events = append(s.events, w.ev)
		s.extend(w.ev, w.data)
	}
}

// extend brings s.hist up to date with ev, the last of s.events.
func (s *sessionState) extend(ev session.Event, data any) {
	if s.hist != nil && s.hist.add(ev, data) != nil {
		// The log took what the derivation refuses: derived again from
		// the events when next needed, that says what is wrong.
		s.hist = nil
	}
}

// history returns what is derived from the session's events, deriving it
// from all of them only when the log was (re)read since. The error is
// Conversation's for a log that breaks its rules. Called under turnMu.
func (s *sessionState) history() (*history, error) {
	if s.hist == nil {
		h := newHistory()
		h.grow(s.events)
		for _, ev := range s.events {
			if err := h.add(ev, nil); err != nil {
				return nil, err
			}
		}
		s.hist = h
	}
	return s.hist, nil
}

// retryChain is session.RetryChain of the session's events.
func (s *sessionState) retryChain() (id string, retries int, used map[string]int) {
	if h, err := s.history(); err == nil {
		return h.conv.RetryChain()
	}
	return session.RetryChain(s.events)
}

// newID returns prefix + 128 random bits in hex.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
