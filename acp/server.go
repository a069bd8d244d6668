package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// AgentName is agentInfo.name in the initialize response.
const AgentName = "rebound"

// Config configures a Server. The zero value works: version "dev", no
// logging, the production line limit.
type Config struct {
	// Version is agentInfo.version.
	Version string
	// Logger is where the server logs (stderr in production; never the
	// protocol stream). The zero value discards.
	Logger zerolog.Logger
	// CapabilitiesMeta is sent as agentCapabilities._meta, for advertising
	// Rebound's extensions.
	CapabilitiesMeta Meta
	// McpCapabilities are the MCP transports beyond stdio the agent
	// connects to; nil advertises none.
	McpCapabilities *McpCapabilities
	// MaxLineBytes caps an input line; 0 means MaxLineBytes.
	MaxLineBytes int
}

// Server speaks ACP over one stdio connection and dispatches typed requests
// to an Agent. It maps errors to wire errors once, on the way out.
//
// Concurrency is chosen per method: initialize and session/cancel run
// inline on the read goroutine, so they keep wire order and a cancel is
// never queued behind the turn it cancels; every method that reaches the
// Agent (authenticate, session/new, load, prompt, list, resume, close and
// delete) runs in a goroutine of its own, because the agent may be slow
// (creating or loading a session log reads it from disk, session/close
// waits for the turn it cancels) and load and prompt call back into the
// client, whose answers a handler blocking the read loop would never see.
// So the read goroutine never waits for the agent: a session/cancel is
// handled as soon as it is read, whatever the agent is doing.
//
// Requests before initialize are served anyway, with empty client
// capabilities: Zed always initializes first, rejecting others would only
// make hand-driven and test clients fail for no protection gained.
type Server struct {
	agent Agent
	cfg   Config
	log   zerolog.Logger

	served atomic.Bool
	out    *LineStream // the connection's stream: session updates are written to it directly
	// base parents every turn and load context; Serve sets it before the
	// read goroutine starts and cancels it with ErrShutdown on the way out.
	base context.Context
	stop context.CancelCauseFunc

	mu   sync.Mutex
	caps ClientCapabilities
	// initialized is set by the first initialize: what a session may do
	// (write through the editor, run in its terminal) depends on the
	// capabilities it declares, so nothing else is served before it.
	initialized bool
	turns       map[string]*runningPrompt // running turn per session id
	// closing counts the session/close and session/delete requests being
	// served per session id: prompts for it are refused meanwhile.
	closing  map[string]int
	stopping bool           // set once; no work starts after it
	work     sync.WaitGroup // goroutines calling the agent; Add only under mu while !stopping
	readErr  error          // why the input failed, if not a plain EOF

	// shutdown runs once: the first caller sets shutdownRun and closes
	// stopped when done; later ones wait for that (a channel, not a
	// sync.Once: a goroutine waiting on one is durably blocked, so
	// testing/synctest's clock can run).
	shutdownRun bool
	stopped     chan struct{}

	nextCallID atomic.Uint64 // the last id of a request sent to the client
}

// runningPrompt is one running session/prompt, an entry of Server.turns;
// the pointer is the registry token, so a finished prompt only removes its
// own entry, never a newer one. Not "turn": that is the agent's loop (package
// agent), which this only starts and cancels.
type runningPrompt struct {
	cancel context.CancelCauseFunc
	// ending is set, under Server.mu, by session/cancel or when the agent
	// has returned: a new prompt for the session then waits for done
	// instead of being refused.
	ending bool
	done   chan struct{} // closed after the turn's reply was written
}

var _ jsonrpc2.Handler = (*Server)(nil)

// NewServer returns a server for one connection.
func NewServer(agent Agent, cfg Config) *Server {
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	return &Server{
		agent:   agent,
		cfg:     cfg,
		log:     cfg.Logger.With().Str("component", "acp").Logger(),
		turns:   map[string]*runningPrompt{},
		closing: map[string]int{},
		stopped: make(chan struct{}),
	}
}

// Serve runs the connection until the input ends or ctx is done. Either way
// it then cancels running turns with ErrShutdown, waits for them to reply
// (cancelled) and for the output to be written, and returns: nil at the end
// of input, ctx.Err() when ctx was done, the read error if the input broke.
// The wait is bounded (stopTimeout, 2 s, then closeGrace, 1 s), so Serve
// returns even if nobody reads out: what is still unwritten then is dropped
// and logged. Nothing but protocol messages is written to out. When ctx
// ends Serve closes in if it is an io.Closer, so the blocked read returns;
// otherwise that read is left to end on its own. A Server serves one
// connection.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if !s.served.CompareAndSwap(false, true) {
		return errors.New("acp: Serve called twice; a Server serves one connection")
	}
	s.base, s.stop = context.WithCancelCause(context.WithoutCancel(ctx))
	s.out = NewLineStream(StdioConn(in, out), StreamConfig{MaxLineBytes: s.cfg.MaxLineBytes, Logger: s.log})
	// When the input ends, the turns are drained while the connection can
	// still carry their replies: jsonrpc2.Conn closes itself as soon as
	// ReadObject fails.
	s.out.onInputEnd = s.inputEnded
	// The connection must outlive ctx: turns are answered before it closes.
	conn := jsonrpc2.NewConn(context.WithoutCancel(ctx), s.out, s, jsonrpc2.SetLogger(RPCLogger{L: s.log}))
	select {
	case <-conn.DisconnectNotify():
		s.shutdown() // done already by inputEnded; kept for any other close
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.readErr
	case <-ctx.Done():
		s.log.Info().Err(context.Cause(ctx)).Msg("acp: stopping")
		s.shutdown()
		conn.Close()
		return ctx.Err()
	}
}

func (s *Server) inputEnded(err error) {
	s.mu.Lock()
	if !s.stopping && !errors.Is(err, io.EOF) {
		s.readErr = fmt.Errorf("acp: connection: %w", err)
	}
	s.mu.Unlock()
	s.log.Debug().Err(err).Msg("acp: input ended")
	s.shutdown()
}

// stopTimeout bounds how long a stopping Server waits for its running work
// to reply (turns are cancelled first, so they answer at once unless the
// output is stuck) and for the output to be written, before it closes the
// stream anyway; closeGrace more is then allowed for the work to end.
const stopTimeout = 2 * time.Second

// shutdown stops new work, cancels what runs, and waits, at most
// stopTimeout, for it to reply and for the output to be written. Then it
// closes the stream: output nobody has read by then is dropped, and work
// blocked writing it returns. So shutdown is bounded even when nobody
// reads the output. It runs once; a concurrent call waits for it.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.stopping = true
	first := !s.shutdownRun
	s.shutdownRun = true
	s.mu.Unlock()
	if !first {
		<-s.stopped
		return
	}
	defer close(s.stopped)
	s.stop(ErrShutdown)

	deadline := time.Now().Add(stopTimeout)
	done := make(chan struct{})
	go func() {
		s.work.Wait()
		close(done)
	}()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	finished := true
	select {
	case <-done:
	case <-t.C:
		finished = false
		s.log.Warn().Dur("after", stopTimeout).Msg("acp: requests still running at shutdown; closing the output")
	}
	if err := s.out.closeWithin(time.Until(deadline)); err != nil {
		s.log.Warn().Err(err).Msg("acp: output lost at shutdown")
	}
	if !finished {
		t.Reset(closeGrace)
		select {
		case <-done:
		case <-t.C:
			s.log.Warn().Msg("acp: the agent did not stop; leaving its requests unanswered")
		}
	}
}

// Handle dispatches one message. It runs on the connection's read
// goroutine; anything that may wait goes to a goroutine of its own.
func (s *Server) Handle(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	if req.Notif && req.Method != MethodSessionCancel {
		// Nothing else ACP v1 sends as a notification needs acting on:
		// $/cancel_request (no request here is cancellable that way yet),
		// `_`-prefixed extensions, and unknown ones are all ignored.
		s.log.Debug().Str("method", req.Method).Msg("acp: notification ignored")
		return
	}
	ev := s.log.Debug().Str("method", req.Method)
	if !req.Notif {
		ev = ev.Str("id", s.idText(req.ID))
	}
	ev.Msg("acp: received")
	if req.Method != MethodInitialize && !s.isInitialized() {
		if !req.Notif {
			s.reply(ctx, c, req, nil, errNotInitialized(req.Method))
		}
		return
	}
	switch req.Method {
	case MethodInitialize:
		res, err := s.initialize(req)
		s.reply(ctx, c, req, res, err)
	case MethodAuthenticate:
		s.authenticate(c, req)
	case MethodLogout:
		s.logout(c, req)
	case MethodSessionNew:
		s.newSession(c, req)
	case MethodSessionLoad:
		s.loadSession(c, req)
	case MethodSessionPrompt:
		s.prompt(c, req)
	case MethodSessionList:
		s.listSessions(c, req)
	case MethodSessionResume:
		s.resumeSession(c, req)
	case MethodSessionClose:
		s.closeSession(c, req)
	case MethodSessionDelete:
		s.deleteSession(c, req)
	case MethodSessionSetMode:
		s.setMode(c, req)
	case MethodSessionSetConfigOption:
		s.setConfigOption(c, req)
	case MethodSessionCancel:
		err := s.cancel(req)
		if req.Notif {
			if err != nil {
				s.log.Warn().Err(err).Msg("acp: bad session/cancel ignored")
			}
			return
		}
		// Sent as a request by mistake: still cancel, and answer so the
		// client isn't left waiting.
		s.reply(ctx, c, req, nil, err)
	default:
		s.reply(ctx, c, req, nil, NewMethodNotFound(req.Method))
	}
}

func (s *Server) isInitialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

// errNotInitialized answers a request that came before initialize. A
// session served without the client's capabilities would write files past
// the editor's buffers and run commands outside its terminal without a word.
func errNotInitialized(method string) error {
	return &RequestError{Code: CodeInvalidRequest,
		Message: method + " came before initialize: Rebound serves nothing until the client has sent initialize with its capabilities. Restart the agent from the editor, or report this to the editor's developers.",
		Data:    map[string]any{"reason": "not_initialized", "method": method}}
}

func (s *Server) initialize(req *jsonrpc2.Request) (InitializeResponse, error) {
	var p InitializeRequest
	if err := decodeParams(req, &p, false); err != nil {
		return InitializeResponse{}, err
	}
	s.mu.Lock()
	s.caps = p.ClientCapabilities
	s.initialized = true
	s.mu.Unlock()
	ev := s.log.Info().Int("clientProtocolVersion", p.ProtocolVersion)
	if p.ClientInfo != nil {
		ev = ev.Str("client", p.ClientInfo.Name).Str("clientVersion", p.ClientInfo.Version)
	}
	ev.Msg("acp: initialize")
	// Version 1 is the only one spoken; the spec says to answer with the
	// latest supported one when the client's differs, and let it decide.
	return InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{EmbeddedContext: true, Image: true},
			SessionCapabilities: s.sessionCapabilities(),
			McpCapabilities:     s.cfg.McpCapabilities,
			Auth:                s.authCapabilities(),
			Meta:                s.cfg.CapabilitiesMeta,
		},
		AuthMethods: s.authMethods(p.ClientCapabilities),
		AgentInfo:   &Implementation{Name: AgentName, Version: s.cfg.Version},
	}, nil
}

// sessionCapabilities advertises the optional session methods the agent
// implements; nil when it implements none.
func (s *Server) sessionCapabilities() *SessionCapabilities {
	var sc SessionCapabilities
	yes := func(ok bool) *struct{} {
		if ok {
			return &struct{}{}
		}
		return nil
	}
	_, list := s.agent.(SessionLister)
	_, resume := s.agent.(SessionResumer)
	_, closer := s.agent.(SessionCloser)
	_, deleter := s.agent.(SessionDeleter)
	sc.List, sc.Resume, sc.Close, sc.Delete = yes(list), yes(resume), yes(closer), yes(deleter)
	if sc == (SessionCapabilities{}) {
		return nil
	}
	return &sc
}

// newSession checks the params on the read goroutine and runs the agent's
// NewSession in a goroutine of its own: it creates the session's log and
// reads it back, which a slow disk makes slow.
func (s *Server) newSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var p NewSessionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkWorkspace(p.Cwd, p.AdditionalDirectories, p.McpServers)
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	if p.McpServers == nil { // required by the schema, but nothing is lost by a default
		p.McpServers = []McpServer{}
	}
	goAgentThen(s, c, req, func() (NewSessionResponse, error) { return s.agent.NewSession(s.base, p) },
		func(r NewSessionResponse) { s.answered(c, r.SessionID) })
}

func (s *Server) loadSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	var p LoadSessionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err == nil {
		err = checkWorkspace(p.Cwd, p.AdditionalDirectories, p.McpServers)
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	if p.McpServers == nil {
		p.McpServers = []McpServer{}
	}
	// One goroutine sends the replayed updates and then the reply, so the
	// reply comes after all of them.
	goAgentThen(s, c, req, func() (LoadSessionResponse, error) { return s.agent.LoadSession(s.base, p, editorConn{s: s, c: c}) },
		func(LoadSessionResponse) { s.answered(c, p.SessionID) })
}

// listSessions serves session/list in a goroutine of its own: the agent
// reads the state directory.
func (s *Server) listSessions(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	lister, ok := s.agent.(SessionLister)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p ListSessionsRequest
	err := decodeParams(req, &p, false)
	if err == nil && p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
		err = NewInvalidParams("cwd must be an absolute path, got %s", quote(p.Cwd))
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	goAgent(s, c, req, func() (ListSessionsResponse, error) { return lister.ListSessions(s.base, p) })
}

// resumeSession serves session/resume like session/load, without a replay.
func (s *Server) resumeSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	resumer, ok := s.agent.(SessionResumer)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p ResumeSessionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err == nil {
		err = checkWorkspace(p.Cwd, p.AdditionalDirectories, p.McpServers)
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	goAgentThen(s, c, req, func() (ResumeSessionResponse, error) { return resumer.ResumeSession(s.base, p) },
		func(ResumeSessionResponse) { s.answered(c, p.SessionID) })
}

// closeSession serves session/close: the session's running turn, if any,
// is cancelled as session/cancel would (its cause is ErrSessionClosed) and
// answered; then the agent frees the session. Prompts for the session are
// refused from the moment the request is read until it is answered.
func (s *Server) closeSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	closer, ok := s.agent.(SessionCloser)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p CloseSessionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		s.reply(s.base, c, req, nil, errShuttingDown)
		return
	}
	// The latest turn: one queued behind an ending one waits for it, so
	// its reply comes last.
	t := s.turns[p.SessionID]
	if t != nil {
		t.ending = true
	}
	s.closing[p.SessionID]++
	s.work.Add(1)
	s.mu.Unlock()
	if t != nil {
		t.cancel(ErrSessionClosed)
	}
	go runAgent(s, c, req, func() (CloseSessionResponse, error) {
		defer s.doneClosing(p.SessionID)
		if t != nil {
			<-t.done // the prompt has been answered
		}
		return closer.CloseSession(s.base, p)
	}, nil)
}

// deleteSession serves session/delete, which is refused while a turn of
// the session runs: the turn would write to a log being removed.
func (s *Server) deleteSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	deleter, ok := s.agent.(SessionDeleter)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p DeleteSessionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	s.mu.Lock()
	switch {
	case s.stopping:
		err = errShuttingDown
	case s.turns[p.SessionID] != nil:
		err = NewSessionRunning(p.SessionID, MethodSessionDelete)
	default:
		s.closing[p.SessionID]++
		s.work.Add(1)
	}
	s.mu.Unlock()
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	go runAgent(s, c, req, func() (DeleteSessionResponse, error) {
		defer s.doneClosing(p.SessionID)
		return deleter.DeleteSession(s.base, p)
	}, nil)
}

// setMode serves session/set_mode in a goroutine of its own, even while a
// turn of the session runs: the agent applies it from the turn's next
// model request.
func (s *Server) setMode(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	setter, ok := s.agent.(SessionModeSetter)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p SetSessionModeRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err == nil && p.ModeID == "" {
		err = NewInvalidParams("modeId is required")
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	goAgent(s, c, req, func() (SetSessionModeResponse, error) {
		return setter.SetSessionMode(s.base, p, editorConn{s: s, c: c})
	})
}

// setConfigOption serves session/set_config_option like setMode.
func (s *Server) setConfigOption(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	setter, ok := s.agent.(SessionConfigSetter)
	if !ok {
		s.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return
	}
	var p SetSessionConfigOptionRequest
	err := decodeParams(req, &p, true)
	if err == nil {
		err = checkSessionID(p.SessionID)
	}
	if err == nil && p.ConfigID == "" {
		err = NewInvalidParams("configId is required")
	}
	if err == nil && len(p.Value) == 0 {
		err = NewInvalidParams("value is required")
	}
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	goAgent(s, c, req, func() (SetSessionConfigOptionResponse, error) {
		return setter.SetSessionConfigOption(s.base, p, editorConn{s: s, c: c})
	})
}

func (s *Server) doneClosing(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing[sessionID]--; s.closing[sessionID] <= 0 {
		delete(s.closing, sessionID)
	}
}

// goAgent runs call, a request to the agent, in a goroutine of its own
// (work that shutdown waits for) and replies with its result.
func goAgent[T any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request, call func() (T, error)) {
	goAgentThen(s, c, req, call, nil)
}

// goAgentThen is goAgent, then, once a result was answered, then(result).
func goAgentThen[T any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request, call func() (T, error), then func(T)) {
	if !s.startWork() {
		s.reply(s.base, c, req, nil, errShuttingDown)
		return
	}
	go runAgent(s, c, req, call, then)
}

// answered tells the agent, if it asks, that a session was answered.
func (s *Server) answered(c *jsonrpc2.Conn, sessionID string) {
	if a, ok := s.agent.(SessionAnswerer); ok {
		a.SessionAnswered(s.base, sessionID, editorConn{s: s, c: c})
	}
}

// runAgent is the body of a request's goroutine, for work that shutdown
// already counts: it calls the agent, turns a panic into an error, replies,
// calls then (if not nil) with a result that was answered, and marks the
// work done.
func runAgent[T any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request, call func() (T, error), then func(T)) {
	defer s.work.Done()
	res, err := func() (_ T, err error) {
		defer s.recoverAgent(req.Method, &err)
		return call()
	}()
	s.reply(context.WithoutCancel(s.base), c, req, res, err)
	if err == nil && then != nil {
		then(res)
	}
}

var errShuttingDown = &RequestError{Code: CodeRequestCancelled, Message: "Rebound is shutting down"}

func (s *Server) startWork() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return false
	}
	s.work.Add(1)
	return true
}

func (s *Server) prompt(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p, err := decodePrompt(req)
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	ctx, t, prev, err := s.startTurn(p.SessionID)
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	go func() {
		defer s.work.Done()
		defer s.endTurn(p.SessionID, t)
		if prev != nil {
			// The previous turn is ending but hasn't replied yet (an editor
			// may send cancel and the next prompt back to back). Its reply
			// goes first; the agent never runs two turns of a session.
			<-prev.done
		}
		res, err := func() (_ PromptResponse, err error) {
			defer s.recoverAgent(MethodSessionPrompt, &err)
			return s.agent.Prompt(ctx, p, editorConn{s: s, c: c})
		}()
		// From here a new prompt is not refused: the client may send it as
		// soon as it reads the reply, before endTurn has run.
		s.mu.Lock()
		t.ending = true
		s.mu.Unlock()
		if errors.Is(context.Cause(ctx), ErrCancelled) && (err != nil || res.StopReason == "") {
			// A cancelled turn is a result, never an error (ACP prompt-turn
			// spec), whatever the agent's unwinding returned.
			if err != nil {
				s.log.Debug().Err(err).Str("sessionId", p.SessionID).Msg("acp: error from a cancelled turn answered as cancelled")
			}
			res, err = PromptResponse{StopReason: StopCancelled}, nil
		}
		if err == nil && res.StopReason == "" {
			err = errors.New("the turn ended without a stop reason")
		}
		s.reply(context.WithoutCancel(ctx), c, req, res, err)
	}()
}

// startTurn registers a turn before its goroutine starts, so a session/cancel
// read right after the prompt finds it.
func (s *Server) startTurn(sessionID string) (context.Context, *runningPrompt, *runningPrompt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil, nil, nil, errShuttingDown
	}
	if s.closing[sessionID] > 0 {
		return nil, nil, nil, NewSessionClosing(sessionID)
	}
	prev := s.turns[sessionID]
	if prev != nil && !prev.ending {
		return nil, nil, nil, NewSessionBusy(sessionID)
	}
	ctx, cancel := context.WithCancelCause(s.base)
	t := &runningPrompt{cancel: cancel, done: make(chan struct{})}
	s.turns[sessionID] = t
	s.work.Add(1)
	return ctx, t, prev, nil
}

func (s *Server) endTurn(sessionID string, t *runningPrompt) {
	s.mu.Lock()
	if s.turns[sessionID] == t {
		delete(s.turns, sessionID)
	}
	s.mu.Unlock()
	t.cancel(nil) // release the context; a no-op if it was cancelled
	close(t.done)
}

func (s *Server) cancel(req *jsonrpc2.Request) error {
	var p CancelNotification
	if err := decodeParams(req, &p, true); err != nil {
		return err
	}
	if err := checkSessionID(p.SessionID); err != nil {
		return err
	}
	s.mu.Lock()
	t := s.turns[p.SessionID]
	if t != nil {
		t.ending = true
	}
	s.mu.Unlock()
	if t == nil {
		// The turn may have just finished: cancel races with the reply.
		s.log.Debug().Str("sessionId", p.SessionID).Msg("acp: session/cancel with no running turn")
		return nil
	}
	t.cancel(ErrCancelled)
	return nil
}

// recoverAgent turns a panic in the agent into an error reply: the editor
// gets an answer and the other sessions keep running, and the stack goes to
// the log.
func (s *Server) recoverAgent(method string, err *error) {
	if r := recover(); r != nil {
		s.log.Error().Str("method", method).Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg("acp: agent panicked")
		*err = fmt.Errorf("internal error in %s: %v", method, r)
	}
}

// reply answers req once, mapping err to the wire error here and nowhere
// else.
func (s *Server) reply(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request, res any, err error) {
	var raw json.RawMessage
	if err == nil {
		if raw, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("encode %s result: %w", req.Method, err)
		}
	}
	var sendErr error
	if err != nil {
		werr := wireError(err)
		ev := s.log.Debug()
		if werr.Code == CodeInternalError {
			ev = s.log.Warn()
		}
		ev.Err(err).Str("method", req.Method).Str("id", s.idText(req.ID)).Int64("code", werr.Code).Msg("acp: request failed")
		sendErr = c.ReplyWithError(ctx, req.ID, werr)
	} else {
		sendErr = c.Reply(ctx, req.ID, raw)
	}
	// ErrClosed means the client went away, errStreamClosed that shutdown
	// gave up on the output; there is no one to tell.
	if sendErr != nil && !errors.Is(sendErr, jsonrpc2.ErrClosed) && !errors.Is(sendErr, errStreamClosed) {
		s.log.Warn().Err(sendErr).Str("method", req.Method).Msg("acp: reply not sent")
	}
}

// idText is id as the client sent it, for logs.
func (s *Server) idText(id jsonrpc2.ID) string {
	if s.out == nil {
		return id.String()
	}
	return s.out.idText(id)
}

// wireError maps an error to its JSON-RPC error. errors.As (not a type
// assertion, as jsonrpc2.HandlerWithError does) so a wrapped *RequestError
// keeps its code.
func wireError(err error) *jsonrpc2.Error {
	if re, ok := errors.AsType[*RequestError](err); ok {
		e := &jsonrpc2.Error{Code: int64(re.Code), Message: re.Message}
		if re.Data != nil {
			if b, merr := json.Marshal(re.Data); merr == nil {
				raw := json.RawMessage(b)
				e.Data = &raw
			}
		}
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &jsonrpc2.Error{Code: CodeRequestCancelled, Message: "Request cancelled"}
	}
	return &jsonrpc2.Error{Code: CodeInternalError, Message: clip(err.Error(), maxErrorMessage)}
}

// maxErrorMessage bounds the message of an internal error, which may quote
// what the client sent (the full error is logged).
const maxErrorMessage = 1024

// clip returns s, or its first n bytes (at a rune boundary) and "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// quote quotes a string the client sent for an error message, clipped to
// maxQuoted bytes: an error never echoes much more than that of its input.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(clip(s, maxQuoted)) + fmt.Sprintf(" (%d bytes)", len(s))
}

const maxQuoted = 64

// editorConn is the Agent's view of the editor: the server's side of the
// connection, implementing Client. Not "client": elsewhere (internal/demo)
// that names a client of the agent, the opposite role. Its calls to the
// editor are in client.go.
type editorConn struct {
	s *Server
	c *jsonrpc2.Conn
}

var _ Client = editorConn{}

// Update sends a session/update notification. It is written before Update
// returns, so updates and the turn's reply keep the order they were made in.
// It does not refuse a cancelled ctx: the spec lets a cancelled turn send its
// last updates before it answers.
func (cl editorConn) Update(ctx context.Context, sessionID string, u SessionUpdate) error {
	line, err := updateLine(sessionID, u)
	if err != nil {
		return err
	}
	return cl.s.out.WriteLine(line)
}

// updateLine encodes a session/update notification as the line
// jsonrpc2.Conn.Notify would send (keys in the same order, the same escaping),
// once: Notify marshals the params, then the envelope around them, and the
// stream would check them a third time. Updates are most of what Rebound
// writes, one per streamed chunk.
func updateLine(sessionID string, u SessionUpdate) ([]byte, error) {
	update, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	id, err := json.Marshal(sessionID)
	if err != nil {
		return nil, err
	}
	const head = `{"jsonrpc":"2.0","method":"` + MethodSessionUpdate + `","params":{"sessionId":`
	line := make([]byte, 0, len(head)+len(id)+len(update)+len(`,"update":}}`)+1)
	line = append(append(append(append(line, head...), id...), `,"update":`...), update...)
	return append(line, "}}\n"...), nil
}

// Capabilities returns what the client advertised in initialize (zero
// before it).
func (cl editorConn) Capabilities() ClientCapabilities {
	cl.s.mu.Lock()
	defer cl.s.mu.Unlock()
	return cl.s.caps
}

// RPCLogger adapts zerolog to jsonrpc2.Logger at Warn level:
// (*zerolog.Logger).Printf logs at Debug, which would hide jsonrpc2's
// protocol errors.
type RPCLogger struct{ L zerolog.Logger }

func (l RPCLogger) Printf(format string, v ...any) {
	l.L.Warn().Msg(strings.TrimSuffix(fmt.Sprintf(format, v...), "\n"))
}

// decodeParams unmarshals req's params into v. Missing or null params are an
// error when required; a type error names the field.
func decodeParams(req *jsonrpc2.Request, v any, required bool) error {
	if req.Params == nil || string(*req.Params) == "null" {
		if required {
			return NewInvalidParams("params are required")
		}
		return nil
	}
	return decodeJSON(*req.Params, v, "")
}

// decodeJSON unmarshals raw into v; path is where raw sits in the params
// ("" for the params themselves, "prompt[2]" for a block).
func decodeJSON(raw []byte, v any, path string) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	e := NewInvalidParams("%s", describeJSONError(err, path, "params"))
	e.Err = err
	return e
}

// describeJSONError says what is wrong with a value json.Unmarshal refused.
// A type error names the member: path is where the value sits ("" for the
// top), top names the top ("params", "result").
func describeJSONError(err error, path, top string) string {
	te, ok := errors.AsType[*json.UnmarshalTypeError](err)
	if !ok {
		return err.Error()
	}
	field := te.Field
	switch {
	case path != "" && field != "":
		field = path + "." + field
	case path != "":
		field = path
	case field == "":
		field = top
	}
	return fmt.Sprintf("%s must be %s, not %s", field, jsonKind(te.Type), te.Value)
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid " + t.String()
}

// MaxSessionIDBytes bounds a session id. The ids Rebound gives out are
// "sess_" and 32 hex digits; its session logs are named after them, which
// allows 1 to 128 ASCII letters, digits, '-' and '_'.
const MaxSessionIDBytes = 128

// checkSessionID refuses, with -32602, a session id no session can have,
// before it reaches the agent, quoting at most a short prefix of it.
func checkSessionID(id string) error {
	if id == "" {
		return NewInvalidParams("sessionId is required")
	}
	ok := len(id) <= MaxSessionIDBytes
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if !ok {
		return NewInvalidParams("sessionId %s is not a session id (1 to %d letters, digits, '-' or '_')", quote(id), MaxSessionIDBytes)
	}
	return nil
}

// checkCwd checks the session's directories: tools resolve paths against
// them, so they must be absolute.
// checkWorkspace checks what session/new, load and resume share: where
// the session works and the MCP servers it uses.
func checkWorkspace(cwd string, additional []string, servers []McpServer) error {
	if err := checkCwd(cwd, additional); err != nil {
		return err
	}
	return checkMcpServers(servers)
}

func checkCwd(cwd string, additional []string) error {
	switch {
	case cwd == "":
		return NewInvalidParams("cwd is required")
	case !filepath.IsAbs(cwd):
		return NewInvalidParams("cwd must be an absolute path, got %s", quote(cwd))
	}
	for i, d := range additional {
		if !filepath.IsAbs(d) {
			return NewInvalidParams("additionalDirectories[%d] must be an absolute path, got %s", i, quote(d))
		}
	}
	return nil
}

// decodePrompt reads session/prompt params, block by block so an error can
// name the block's index (encoding/json's field paths have none).
func decodePrompt(req *jsonrpc2.Request) (PromptRequest, error) {
	var p struct {
		SessionID string            `json:"sessionId"`
		Prompt    []json.RawMessage `json:"prompt"`
		Meta      Meta              `json:"_meta,omitempty"`
	}
	if err := decodeParams(req, &p, true); err != nil {
		return PromptRequest{}, err
	}
	if err := checkSessionID(p.SessionID); err != nil {
		return PromptRequest{}, err
	}
	if p.Prompt == nil {
		return PromptRequest{}, NewInvalidParams("prompt is required")
	}
	blocks := make([]ContentBlock, len(p.Prompt))
	for i, raw := range p.Prompt {
		path := fmt.Sprintf("prompt[%d]", i)
		if err := decodeJSON(raw, &blocks[i], path); err != nil {
			return PromptRequest{}, err
		}
		if err := checkBlock(blocks[i], path); err != nil {
			return PromptRequest{}, err
		}
	}
	return PromptRequest{SessionID: p.SessionID, Prompt: blocks, Meta: p.Meta}, nil
}

// checkBlock checks the members a block's type requires and that can be
// told apart from empty. image and audio are accepted here although not
// advertised: whether to use them is the agent's call.
func checkBlock(b ContentBlock, path string) error {
	switch b.Type {
	case "":
		return NewInvalidParams("%s.type is required", path)
	case "text", "image", "audio":
	case "resource_link":
		if b.URI == "" {
			return NewInvalidParams("%s.uri is required", path)
		}
		if b.Name == "" {
			return NewInvalidParams("%s.name is required", path)
		}
	case "resource":
		switch {
		case b.Resource == nil:
			return NewInvalidParams("%s.resource is required", path)
		case b.Resource.URI == "":
			return NewInvalidParams("%s.resource.uri is required", path)
		case b.Resource.Text == nil && b.Resource.Blob == nil:
			return NewInvalidParams("%s.resource needs text or blob", path)
		}
	default:
		return NewInvalidParams("%s.type %s is not a content block type (text, image, audio, resource_link, resource)", path, quote(b.Type))
	}
	return nil
}
