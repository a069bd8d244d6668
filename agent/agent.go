// Package agent runs sessions and turns: it renders prompts for the model,
// runs each step against the provider, records everything in the session log
// and commits replies to the editor only once a step has succeeded.
package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/llm"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Config is what an Agent needs; cmd/rebound fills it from the user's
// configuration.
type Config struct {
	StateDir  string
	Model     string
	MaxTokens int
	// Provider starts attempts. Nil means no API key was configured: prompts
	// then fail with auth required, naming APIKeyEnv.
	Provider  llm.Provider
	APIKeyEnv string
	Recovery  recovery.Config
	// Truncation and Overflow configure the recoveries that change the
	// request, which the agent carries out.
	Truncation Truncation
	Overflow   Overflow
	// Live sends each chunk as it arrives (recorded first); otherwise a
	// step's reply is held back until it has finished.
	Live bool
	// MaxSteps bounds the logical model requests of one turn (the agent
	// loop's steps); the turn then stops with max_turn_requests.
	MaxSteps int
	Tools    Tools
	// Instructions are added to the built-in system prompt, or replace it
	// when ReplaceInstructions is set.
	Instructions        string
	ReplaceInstructions bool
	Version             string
	Logger              zerolog.Logger
}

// Tools configures the tools the model may call.
type Tools struct {
	CommandTimeout    time.Duration // run_command's default timeout
	MaxCommandTimeout time.Duration // the most a call may ask for
	OutputLimit       int           // bytes of command output kept (head and tail)
}

// Truncation configures recovery from finish_reason length.
type Truncation struct {
	EscalatedMaxTokens int // the one retry's output budget; skipped when MaxTokens is already at least this
	MaxContinuations   int // continuation requests after that
}

// Overflow configures compaction on CONTEXT_OVERFLOW (enabled in
// recovery.Config.Overflow).
type Overflow struct {
	KeepRecentMessages int // history messages kept verbatim before the prompt
}

// Agent implements acp.Agent.
type Agent struct {
	cfg Config

	mu       sync.Mutex
	sessions map[string]*sessionState
}

var _ acp.Agent = (*Agent)(nil)

// sessionState is one open session. turnMu serialises turns and loads; the
// acp server already refuses a second concurrent prompt, this keeps the log
// consistent even if another caller does not.
type sessionState struct {
	id             string
	cwd            string
	additionalDirs []string
	turnMu         sync.Mutex
	log            *session.Log
	events         []session.Event   // everything appended or loaded, in order
	rules          map[string]string // standing permission answers by scope, from the log
}

func newSessionState(id, cwd string, additional []string, log *session.Log, events []session.Event) *sessionState {
	return &sessionState{id: id, cwd: cwd, additionalDirs: additional, log: log, events: events, rules: session.PermissionRules(events)}
}

// New returns an agent; zero limits in cfg get their defaults.
func New(cfg Config) *Agent {
	cfg.MaxSteps = cmp.Or(cfg.MaxSteps, DefaultMaxSteps)
	cfg.Tools.CommandTimeout = cmp.Or(cfg.Tools.CommandTimeout, DefaultCommandTimeout)
	cfg.Tools.MaxCommandTimeout = max(cmp.Or(cfg.Tools.MaxCommandTimeout, DefaultMaxCommandTimeout), cfg.Tools.CommandTimeout)
	cfg.Tools.OutputLimit = cmp.Or(cfg.Tools.OutputLimit, DefaultOutputLimit)
	return &Agent{cfg: cfg, sessions: make(map[string]*sessionState)}
}

// Defaults of the agent loop and its tools.
const (
	DefaultMaxSteps          = 50
	DefaultCommandTimeout    = 2 * time.Minute
	DefaultMaxCommandTimeout = 30 * time.Minute
	DefaultOutputLimit       = 64 << 10
)

// NewSession creates the session's log before answering, so a session the
// editor knows about always exists on disk.
func (a *Agent) NewSession(ctx context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	id := newID("sess_")
	start := session.SessionStart{SessionID: id, Cwd: req.Cwd, Model: a.cfg.Model, AgentVersion: a.cfg.Version}
	log, err := session.Create(a.cfg.StateDir, id, start)
	if err != nil {
		return acp.NewSessionResponse{}, fmt.Errorf("create session log: %w", err)
	}
	loaded, err := session.Load(log.Path())
	if err != nil {
		log.Close()
		return acp.NewSessionResponse{}, fmt.Errorf("read back session log: %w", err)
	}
	a.mu.Lock()
	a.sessions[id] = newSessionState(id, req.Cwd, req.AdditionalDirectories, log, loaded.Events)
	a.mu.Unlock()
	a.cfg.Logger.Info().Str("session", id).Str("cwd", req.Cwd).Msg("session created")
	return acp.NewSessionResponse{SessionID: id}, nil
}

// LoadSession opens the session's log (or uses the open one), then replays
// the committed conversation before answering, as ACP requires.
func (a *Agent) LoadSession(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
	s, err := a.open(req.SessionID, req.Cwd, req.AdditionalDirectories)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	// The editor may load a session in another directory than the one it
	// was made in; tools work where the editor says.
	s.cwd, s.additionalDirs = req.Cwd, req.AdditionalDirectories
	msgs, err := session.Conversation(s.events)
	if err != nil {
		return acp.LoadSessionResponse{}, fmt.Errorf("session %s: %w", s.id, err)
	}
	return acp.LoadSessionResponse{}, replay(ctx, c, s.id, tools.NewWorkspace(s.cwd, s.additionalDirs...), msgs)
}

// open returns the in-memory session or opens its log from disk.
func (a *Agent) open(id, cwd string, additional []string) (*sessionState, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.sessions[id]; ok {
		return s, nil
	}
	log, loaded, err := session.Open(a.cfg.StateDir, id)
	if errors.Is(err, session.ErrNotFound) {
		return nil, acp.NewSessionNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", id, err)
	}
	for _, w := range loaded.Warnings {
		a.cfg.Logger.Warn().Str("session", id).Str("path", log.Path()).Msg(w)
	}
	s := newSessionState(id, cwd, additional, log, loaded.Events)
	if loaded.OpenTurn != 0 {
		// The process that ran this turn died mid-turn. Close the turn so the
		// log keeps its invariant and the next turn can start.
		if err := s.closeInterrupted(loaded); err != nil {
			log.Close()
			return nil, fmt.Errorf("close interrupted turn %d of session %s: %w", loaded.OpenTurn, id, err)
		}
		a.cfg.Logger.Warn().Str("session", id).Int("turn", loaded.OpenTurn).Msg("closed a turn interrupted by a previous process")
	}
	a.sessions[id] = s
	return s, nil
}

var interruptedFailure = []byte(`{"code":"ABORTED","message":"the agent process ended during this turn"}`)

// closeInterrupted ends the step and turn a dead process left open, commits
// the reply it was showing, and gives every tool call without a result one
// saying it was interrupted (it may or may not have run), so the log keeps
// its invariants, the next request to the model is valid, and the next turn
// can start.
func (s *sessionState) closeInterrupted(ld *session.Loaded) error {
	turn := ld.OpenTurn
	if ld.OpenStep != 0 {
		if _, err := s.append(session.TypeStepEnd, session.StepEnd{
			Turn: turn, Step: ld.OpenStep, Outcome: session.OutcomeFailed, Failure: interruptedFailure,
		}); err != nil {
			return err
		}
	}
	// Live mode: what the user saw of the reply stays, as it does when a
	// live process fails or is cancelled.
	if u, ok := session.UnfinishedReply(s.events); ok {
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
	_, err := s.appendSync(session.TypeTurnEnd, session.TurnEnd{Turn: turn, Error: interruptedFailure, Interrupted: true})
	return err
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
	var errs []error
	for id, s := range a.sessions {
		errs = append(errs, s.log.Close())
		delete(a.sessions, id)
	}
	return errors.Join(errs...)
}

func (s *sessionState) append(typ string, data any) (session.Event, error) {
	ev, err := s.log.Append(typ, data)
	if err == nil {
		s.events = append(s.events, ev)
	}
	return ev, err
}

func (s *sessionState) appendSync(typ string, data any) (session.Event, error) {
	ev, err := s.log.AppendSync(typ, data)
	if err == nil {
		s.events = append(s.events, ev)
	}
	return ev, err
}

// newID returns prefix + 128 random bits in hex.
func newID(prefix string) string {
	var b [16]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
