package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/tools"
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
	// ModelFrom says where Model was set (config.Config.ModelFrom), for
	// a provider's "no such model"; empty names every place.
	ModelFrom string
	MaxTokens int
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
	// Login is the command line that stores a key (`rebound login`, the
	// running binary's absolute path), sent to clients that run a sign-in
	// command only as _meta["terminal-auth"] says; an empty Command leaves
	// that out (auth.go).
	Login    acp.TerminalAuthMeta
	Recovery recovery.Config
	// Gates returns the shared gate of the provider bucket a request for model goes to (package ratelimit); nil means none.
	Gates func(model string) recovery.Gate
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
	// MCPHTTP, when set, makes the transport of each MCP server over HTTP
	// (proxy, certificate authorities); nil: http.DefaultTransport's.
	MCPHTTP mcp.NewHTTP
	Version string
	Logger  zerolog.Logger
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
	// Routes, when set, lets the client route the model's requests
	// (providers/set, providers.go); nil: providers/* are not served.
	Routes ProviderRoutes
	// SetUp, when set, sets up the provider at sign-in for clients that
	// show forms (signin.go).
	SetUp ProviderSetUp
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

// Agent implements acp.Agent. Its methods (handlers.go) are the ACP
// handlers, each handing the request to the part that serves it, a type or
// function of its own with only what it needs: the sessions and their uses
// (store), the sign-in (auth), the provider's models (catalog), the
// sessions' configuration options (menu, options), the session methods
// (maker, opener, remover, forker, sessions), providers/* (providers), and
// a turn (prompt, turn.go).
type Agent struct {
	cfg     Config
	store   *sessionStore // the sessions this process holds (store.go)
	auth    *signIn       // the provider a turn uses (auth.go)
	setUp   formSetUp     // the sign-in through the editor's forms (signin.go)
	catalog *catalog      // the provider's models (catalog.go)
	menu    *configMenu   // what the sessions' configuration options offer (options.go)
	// providers serves providers/* (providers.go).
	providers providerRouter
	// sessions finds the session a request names, opening it from its log
	// once the client skipped initialize (reopen.go).
	sessions *reopener
	options  optionSetter // session/set_mode and set_config_option (options.go)
	answers  afterAnswer  // what follows a session's answer (catalog.go)
	prompt   systemPrompt // the system prompt (instructions.go)
	// opener serves session/load and resume, remover session/close and
	// delete (lifecycle.go), forker session/fork (fork.go).
	opener  sessionOpener
	remover sessionRemover
	forker  forker
	maker   sessionMaker // session/new (lifecycle.go)
}

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

	// Guarded by turnMu, which every use of the session holds (a turn, a
	// load, a resume): dirs, conversation, use, listing, mcp and fullTurn.
	turnMu useMutex
	dirs   sessionDirs // where its tools work
	// conversation is what is read from the log, and derived from it; it
	// is forgotten when the log closes (closeLog, under the store's lock,
	// which closes only a log not in use).
	conversation
	use     logUse      // how the current use holds the log
	listing sessionList // what a list of sessions shows

	// options are the session's options, and the changes written through
	// a use of it (optionwriter.go); its own lock guards them.
	options optionWriter

	// mcp are the session's MCP servers, replaced by a load or resume.
	mcp *mcpServers
	// fullTurn is the last turn that compacted because the context was
	// nearly full, or tried to (autocompact.go).
	fullTurn int

	// log is nil while closed: set and cleared under the store's lock
	// (sessionHolder.mu), closed when idle as its log cache decides.
	log *session.Log
}

// sessionDirs are where a session's tools work: the editor's cwd and the
// other directories it named (tools.Workspace).
type sessionDirs struct {
	cwd        string
	additional []string
}

// workspace is the tools' view of the directories.
func (d sessionDirs) workspace() *tools.Workspace { return tools.NewWorkspace(d.cwd, d.additional...) }

// conversation is a session's events and what is kept derived from them,
// so a prompt never derives anything from the whole log again. Under
// turnMu; nil throughout while the log is closed.
type conversation struct {
	events []session.Event   // everything appended or loaded, in order
	rules  map[string]string // standing permission answers by scope, from the log
	// hist is derived from events and kept up to date with them; nil
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
}

// logUse is how the session's current use holds its log. Under turnMu.
type logUse struct {
	// reload makes the next acquire close the log and read it again: a
	// turn panicked, and memory may not match the file.
	reload bool
	// locked is set from an acquire that took the log's lock to its
	// release: only then is the log written.
	locked bool
	// loaded is set once the log was opened in this process.
	loaded bool
}

// sessionList is what a list of sessions shows (session.Summary), kept
// while the log is open: the cwd of its session/start, its title, and
// whether that title was recorded (else it was made from the first
// prompt, and the next turn/end records one). Under turnMu.
type sessionList struct {
	home   string
	title  string
	titled bool
}

// useMutex is sessionState.turnMu. It has no Unlock of its own:
// sessionState.unlockTurn lets go of it and wakes the optionRecorder.set calls
// waiting for the session.
type useMutex struct{ mu sync.Mutex }

func (m *useMutex) Lock()         { m.mu.Lock() }
func (m *useMutex) TryLock() bool { return m.mu.TryLock() }

// unlockTurn lets go of turnMu and wakes the optionRecorder.set calls waiting for it.
func (s *sessionState) unlockTurn() { s.options.release(s.turnMu.mu.Unlock) }

// New returns an agent; zero limits in cfg get their defaults.
func New(cfg Config) *Agent {
	cfg.MaxRequests = cmp.Or(cfg.MaxRequests, DefaultMaxRequests)
	cfg.Tools.CommandTimeout = cmp.Or(cfg.Tools.CommandTimeout, DefaultCommandTimeout)
	cfg.Tools.MaxCommandTimeout = max(cmp.Or(cfg.Tools.MaxCommandTimeout, DefaultMaxCommandTimeout), cfg.Tools.CommandTimeout)
	cfg.Tools.OutputLimit = cmp.Or(cfg.Tools.OutputLimit, DefaultOutputLimit)
	cfg.MaxOpenLogs = max(cmp.Or(cfg.MaxOpenLogs, DefaultMaxOpenLogs), 1)
	cfg.LogIdleTimeout = cmp.Or(cfg.LogIdleTimeout, DefaultLogIdleTimeout)
	a := &Agent{cfg: cfg}
	a.auth = newSignIn(&a.cfg)
	setUp := &modelOverride{} // signin.go
	a.catalog = &catalog{provider: a.auth.current, model: cfg.Model, override: setUp, fallback: cfg.Models, contextWindow: cfg.ContextWindow, log: &a.cfg.Logger}
	a.menu = &configMenu{mode: cfg.DefaultMode, model: cfg.Model, override: setUp, effort: cfg.ReasoningEffort, models: a.catalog}
	a.prompt = systemPrompt{instructions: cfg.Instructions, replace: cfg.ReplaceInstructions, log: &a.cfg.Logger}
	a.providers = providerRouter{routes: cfg.Routes, log: &a.cfg.Logger}
	mcpStart := mcpStarter{connect: cfg.MCPConnect, http: cfg.MCPHTTP, secrets: func() proc.Secrets { return childSecrets(&a.cfg) }, log: &a.cfg.Logger}
	dir := stateDir{path: cfg.StateDir, help: cfg.StateDirHelp} // where the logs are, and the errors about them (logerrors.go)
	a.store = newSessionStore(&a.cfg, dir, a.menu)
	a.sessions = &reopener{store: a.store, log: &a.cfg.Logger}
	record := optionRecorder{a.store, dir, &a.cfg.Logger}
	a.options = optionSetter{session: a.sessions.session, set: record.set, menu: a.menu, log: &a.cfg.Logger}
	a.setUp = formSetUp{setUp: cfg.SetUp, auth: a.auth, menu: a.menu, open: a.store.open, setModel: record.set, log: &a.cfg.Logger}
	a.maker = sessionMaker{dir: dir, version: cfg.Version, store: a.store, mcp: mcpStart, menu: a.menu, log: &a.cfg.Logger}
	a.opener = sessionOpener{store: a.store, mcp: mcpStart, menu: a.menu, log: &a.cfg.Logger}
	a.remover = sessionRemover{store: a.store, index: a.store.index, dir: dir, log: &a.cfg.Logger}
	a.forker = forker{dir: dir, model: func() string { return a.menu.defaults().model }, version: cfg.Version, resume: a.opener.resume, discard: a.remover.delete, log: &a.cfg.Logger}
	a.answers = afterAnswer{catalog: a.catalog, menu: a.menu, whileHeld: a.store.whileHeld, log: &a.cfg.Logger}
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

var errAgentClosed = &acp.RequestError{Code: acp.CodeInternalError, Message: "Rebound is shutting down"}

// closeLog closes s's log, if open, and forgets its events. Under the
// store's lock.
func (s *sessionState) closeLog() error {
	if s.log == nil {
		return nil
	}
	err := s.log.Close()
	s.log = nil
	s.conversation = conversation{}
	return err
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
// to events. In order with the options' changes (optionWriter.inOrder), so
// that the records optionRecorder.set wrote through this use meanwhile come first
// in events, as they do in the file.
func (s *sessionState) record(typ string, data any, sync bool) (session.Event, error) {
	var ev session.Event
	var err error
	s.takeWritten(s.options.inOrder(func() {
		if sync {
			ev, err = s.log.AppendSync(typ, data)
		} else {
			ev, err = s.log.Append(typ, data)
		}
	}))
	if err != nil {
		return ev, &recordError{err}
	}
	s.events = append(s.events, ev)
	s.extend(ev, data)
	return ev, nil
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

// current is the session's configuration now.
func (s *sessionState) current() options { return s.options.current() }

// currentMode is the session's mode now.
func (s *sessionState) currentMode() string { return s.current().mode }

// pendingEvent is a record optionRecorder.set wrote, with the data it was made of.
type pendingEvent struct {
	ev   session.Event
	data any
}

// takeWritten adds the records optionRecorder.set wrote to events. Called by the
// holder of turnMu.
func (c *conversation) takeWritten(written []pendingEvent) {
	for _, w := range written {
		c.events = append(c.events, w.ev)
		c.extend(w.ev, w.data)
	}
}

// extend brings c.hist up to date with ev, the last of c.events.
func (c *conversation) extend(ev session.Event, data any) {
	if c.hist != nil && c.hist.add(ev, data) != nil {
		// The log took what the derivation refuses: derived again from
		// the events when next needed, that says what is wrong.
		c.hist = nil
	}
}

// history returns what is derived from the session's events, deriving it
// from all of them only when the log was (re)read since. The error is
// Conversation's for a log that breaks its rules. Called under turnMu.
func (c *conversation) history() (*history, error) {
	if c.hist == nil {
		h := newHistory()
		h.grow(c.events)
		for _, ev := range c.events {
			if err := h.add(ev, nil); err != nil {
				return nil, err
			}
		}
		c.hist = h
	}
	return c.hist, nil
}

// retryChain is session.RetryChain of the session's events.
func (c *conversation) retryChain() (id string, retries int, used map[string]int) {
	if h, err := c.history(); err == nil {
		return h.conv.RetryChain()
	}
	return session.RetryChain(c.events)
}

// toolCallIDs returns the ids of every tool call the session's log holds,
// read once from the log and then kept up to date by toolCalls.
func (c *conversation) toolCallIDs() map[string]bool {
	if c.toolIDs != nil {
		return c.toolIDs
	}
	c.toolIDs = session.ToolCallIDs(c.events)
	return c.toolIDs
}

// newID returns prefix + 128 random bits in hex.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
