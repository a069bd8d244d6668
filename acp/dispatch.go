package acp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"slices"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

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
		ev = ev.Str("id", s.answers.idText(req.ID))
	}
	ev.Msg("acp: received")
	if req.Method != MethodInitialize {
		s.hello.unasked(req.Method)
	}
	switch h, ok := agentMethods[req.Method]; {
	case ok:
		h(s, c, req)
	case req.Method == MethodInitialize:
		res, err := s.hello.initialize(req)
		s.answers.reply(ctx, c, req, res, err)
	case req.Method == MethodSessionCancel:
		err := s.cancel(req)
		if req.Notif {
			if err != nil {
				s.log.Warn().Err(err).Msg("acp: bad session/cancel ignored")
			}
			return
		}
		// Sent as a request by mistake: still cancel, and answer so the
		// client isn't left waiting.
		s.answers.reply(ctx, c, req, nil, err)
	default:
		s.answers.reply(ctx, c, req, nil, NewMethodNotFound(req.Method))
	}
}

// agentMethods are the methods that reach the Agent, each served by a
// handler that checks the params on the read goroutine and calls the agent
// in a goroutine of its own. initialize and session/cancel are not among
// them: they run inline (see Server).
var agentMethods = map[string]func(*Server, *jsonrpc2.Conn, *jsonrpc2.Request){
	MethodAuthenticate:           (*Server).authenticate,
	MethodLogout:                 (*Server).logout,
	MethodSessionNew:             (*Server).newSession,
	MethodSessionLoad:            (*Server).loadSession,
	MethodSessionPrompt:          (*Server).prompt,
	MethodSessionList:            (*Server).listSessions,
	MethodSessionResume:          (*Server).resumeSession,
	MethodSessionClose:           (*Server).closeSession,
	MethodSessionDelete:          (*Server).deleteSession,
	MethodSessionSetMode:         (*Server).setMode,
	MethodSessionSetConfigOption: (*Server).setConfigOption,
	MethodSessionFork:            (*Server).forkSession,
	MethodProvidersList:          (*Server).listProviders,
	MethodProvidersSet:           (*Server).setProvider,
	MethodProvidersDisable:       (*Server).disableProvider,
}

// authenticate checks the method against those advertised to this client
// and runs the agent's Authenticate in a goroutine of its own (it may read
// the disk).
func (s *Server) authenticate(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	auth, ok := s.agent.(Authenticator)
	if !ok {
		s.answers.reply(s.base, c, req, nil, NewInvalidParams("Rebound advertises no authentication methods"))
		return
	}
	handle(s, c, req, true, func(p *AuthenticateRequest) error {
		methods := authMethods(s.agent, s.hello.capabilities())
		switch {
		case p.MethodID == "":
			return NewInvalidParams("methodId is required; the methods are %s", methodList(methods))
		case !slices.ContainsFunc(methods, func(m AuthMethod) bool { return m.ID == p.MethodID }):
			return NewInvalidParams("unknown methodId %s; the methods are %s", quote(p.MethodID), methodList(methods))
		}
		return nil
	}, func(p AuthenticateRequest) (AuthenticateResponse, error) {
		if fa, ok := auth.(FormAuthenticator); ok && s.hello.capabilities().ElicitationForm() {
			cl := editorConn{s: s, c: c}
			return fa.AuthenticateAsking(s.base, p, cl, requestAsker{cl: cl, id: req.ID})
		}
		return auth.Authenticate(s.base, p)
	}, nil)
}

// logout runs the agent's Logout in a goroutine of its own (it writes the
// disk). Without one, the method is not found, as for any method not
// advertised.
func (s *Server) logout(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	auth, ok := implemented[LogoutAuthenticator](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, false, nil, func(p LogoutRequest) (LogoutResponse, error) { return auth.Logout(s.base, p) }, nil)
}

// newSession checks the params on the read goroutine and runs the agent's
// NewSession in a goroutine of its own: it creates the session's log and
// reads it back, which a slow disk makes slow.
func (s *Server) newSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	handle(s, c, req, true, func(p *NewSessionRequest) error {
		return checkWorkspaceDefault(p.Cwd, p.AdditionalDirectories, &p.McpServers)
	}, func(p NewSessionRequest) (NewSessionResponse, error) { return s.agent.NewSession(s.base, p) },
		func(_ NewSessionRequest, r NewSessionResponse) { s.answered(c, r.SessionID) })
}

func (s *Server) loadSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	// One goroutine sends the replayed updates and then the reply, so the
	// reply comes after all of them.
	handle(s, c, req, true, func(p *LoadSessionRequest) error {
		if err := checkSessionID(p.SessionID); err != nil {
			return err
		}
		return checkWorkspaceDefault(p.Cwd, p.AdditionalDirectories, &p.McpServers)
	}, func(p LoadSessionRequest) (LoadSessionResponse, error) {
		return s.agent.LoadSession(s.base, p, editorConn{s: s, c: c})
	}, func(p LoadSessionRequest, _ LoadSessionResponse) { s.answered(c, p.SessionID) })
}

// listSessions serves session/list in a goroutine of its own: the agent
// reads the state directory.
func (s *Server) listSessions(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	lister, ok := implemented[SessionLister](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, false, func(p *ListSessionsRequest) error {
		if p.Cwd != "" && !filepath.IsAbs(p.Cwd) {
			return NewInvalidParams("cwd must be an absolute path, got %s", quote(p.Cwd))
		}
		return nil
	}, func(p ListSessionsRequest) (ListSessionsResponse, error) { return lister.ListSessions(s.base, p) }, nil)
}

// resumeSession serves session/resume like session/load, without a replay.
func (s *Server) resumeSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	resumer, ok := implemented[SessionResumer](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, func(p *ResumeSessionRequest) error {
		if err := checkSessionID(p.SessionID); err != nil {
			return err
		}
		return checkWorkspace(p.Cwd, p.AdditionalDirectories, p.McpServers)
	}, func(p ResumeSessionRequest) (ResumeSessionResponse, error) { return resumer.ResumeSession(s.base, p) },
		func(p ResumeSessionRequest, _ ResumeSessionResponse) { s.answered(c, p.SessionID) })
}

// setMode serves session/set_mode in a goroutine of its own, even while a
// turn of the session runs: the agent applies it from the turn's next
// model request.
func (s *Server) setMode(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	setter, ok := implemented[SessionModeSetter](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, func(p *SetSessionModeRequest) error {
		if err := checkSessionID(p.SessionID); err != nil {
			return err
		}
		if p.ModeID == "" {
			return NewInvalidParams("modeId is required")
		}
		return nil
	}, func(p SetSessionModeRequest) (SetSessionModeResponse, error) {
		return setter.SetSessionMode(s.base, p, editorConn{s: s, c: c})
	}, nil)
}

// setConfigOption serves session/set_config_option like setMode.
func (s *Server) setConfigOption(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	setter, ok := implemented[SessionConfigSetter](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, func(p *SetSessionConfigOptionRequest) error {
		if err := checkSessionID(p.SessionID); err != nil {
			return err
		}
		switch {
		case p.ConfigID == "":
			return NewInvalidParams("configId is required")
		case len(p.Value) == 0:
			return NewInvalidParams("value is required")
		}
		return nil
	}, func(p SetSessionConfigOptionRequest) (SetSessionConfigOptionResponse, error) {
		return setter.SetSessionConfigOption(s.base, p, editorConn{s: s, c: c})
	}, nil)
}

// closeSession serves session/close: the session's running turn, if any,
// is cancelled as session/cancel would (its cause is ErrSessionClosed) and
// answered; then the agent frees the session. Prompts for the session are
// refused from the moment the request is read until it is answered.
func (s *Server) closeSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	closer, ok := implemented[SessionCloser](s, c, req)
	if !ok {
		return
	}
	p, err := decodeChecked(req, true, func(p *CloseSessionRequest) error { return checkSessionID(p.SessionID) })
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	t, err := s.work.startClose(p.SessionID)
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	go runAgent(s, c, req, func() (CloseSessionResponse, error) {
		defer s.work.doneClosing(p.SessionID)
		if t != nil {
			<-t.done // the prompt has been answered
		}
		return closer.CloseSession(s.base, p)
	}, nil)
}

// deleteSession serves session/delete, which is refused while a turn of
// the session runs: the turn would write to a log being removed.
func (s *Server) deleteSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	deleter, ok := implemented[SessionDeleter](s, c, req)
	if !ok {
		return
	}
	p, err := decodeChecked(req, true, func(p *DeleteSessionRequest) error { return checkSessionID(p.SessionID) })
	if err == nil {
		err = s.work.startDelete(p.SessionID)
	}
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	go runAgent(s, c, req, func() (DeleteSessionResponse, error) {
		defer s.work.doneClosing(p.SessionID)
		return deleter.DeleteSession(s.base, p)
	}, nil)
}

func (s *Server) prompt(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p, err := decodePrompt(req)
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	ctx, t, prev, err := s.work.startPrompt(s.base, p.SessionID)
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	go func() {
		defer s.work.done()
		defer s.work.endPrompt(p.SessionID, t)
		if prev != nil {
			// The previous turn is ending but hasn't replied yet (an editor
			// may send cancel and the next prompt back to back). Its reply
			// goes first; the agent never runs two turns of a session.
			<-prev.done
		}
		res, err := func() (_ PromptResponse, err error) {
			defer recoverAgent(s.log, MethodSessionPrompt, &err)
			return s.agent.Prompt(ctx, p, editorConn{s: s, c: c})
		}()
		s.work.answering(t)
		res, err = promptResult(ctx, res, err, func(err error) {
			s.log.Debug().Err(err).Str("sessionId", p.SessionID).Msg("acp: error from a cancelled turn answered as cancelled")
		})
		s.answers.reply(context.WithoutCancel(ctx), c, req, res, err)
	}()
}

// promptResult is what a turn's reply says, given what the agent returned
// for it: a cancelled turn is a result, never an error (ACP prompt-turn
// spec), whatever the agent's unwinding returned (dropped, the error goes
// to logDropped); a result needs a stop reason.
func promptResult(ctx context.Context, res PromptResponse, err error, logDropped func(error)) (PromptResponse, error) {
	if errors.Is(context.Cause(ctx), ErrCancelled) && (err != nil || res.StopReason == "") {
		if err != nil {
			logDropped(err)
		}
		return PromptResponse{StopReason: StopCancelled}, nil
	}
	if err == nil && res.StopReason == "" {
		err = errors.New("the turn ended without a stop reason")
	}
	return res, err
}

func (s *Server) cancel(req *jsonrpc2.Request) error {
	var p CancelNotification
	if err := decodeParams(req, &p, true); err != nil {
		return err
	}
	if err := checkSessionID(p.SessionID); err != nil {
		return err
	}
	if !s.work.cancel(p.SessionID, ErrCancelled) {
		// The turn may have just finished: cancel races with the reply.
		s.log.Debug().Str("sessionId", p.SessionID).Msg("acp: session/cancel with no running turn")
	}
	return nil
}

// The handlers of the unstable methods (unstable.go).

// forkSession serves session/fork like session/new: the agent writes the
// new session's log, which a slow disk makes slow.
func (s *Server) forkSession(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	forker, ok := implemented[SessionForker](s, c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, func(p *ForkSessionRequest) error {
		if err := checkSessionID(p.SessionID); err != nil {
			return err
		}
		return checkWorkspace(p.Cwd, p.AdditionalDirectories, p.McpServers)
	}, func(p ForkSessionRequest) (ForkSessionResponse, error) { return forker.ForkSession(s.base, p) },
		func(_ ForkSessionRequest, r ForkSessionResponse) { s.answered(c, r.SessionID) })
}

// providers returns the agent's ProviderConfigurer, or answers
// method-not-found when it has none that serves.
func (s *Server) providers(c *jsonrpc2.Conn, req *jsonrpc2.Request) (ProviderConfigurer, bool) {
	p, ok := s.agent.(ProviderConfigurer)
	if !ok || !p.ProvidersConfigurable() {
		s.answers.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
		return nil, false
	}
	return p, true
}

func (s *Server) listProviders(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p, ok := s.providers(c, req)
	if !ok {
		return
	}
	handle(s, c, req, false, nil, func(r ListProvidersRequest) (ListProvidersResponse, error) { return p.ListProviders(s.base, r) }, nil)
}

func (s *Server) setProvider(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p, ok := s.providers(c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, checkSetProvider,
		func(r SetProviderRequest) (SetProviderResponse, error) { return p.SetProvider(s.base, r) }, nil)
}

func (s *Server) disableProvider(c *jsonrpc2.Conn, req *jsonrpc2.Request) {
	p, ok := s.providers(c, req)
	if !ok {
		return
	}
	handle(s, c, req, true, func(r *DisableProviderRequest) error {
		if r.ProviderID == "" {
			return NewInvalidParams("providerId is required")
		}
		return nil
	}, func(r DisableProviderRequest) (DisableProviderResponse, error) { return p.DisableProvider(s.base, r) }, nil)
}

// handle serves a method of the shape most share: decode the params (missing
// or null ones refused when required), check them (check may also fill in
// defaults) on the read goroutine, answering a refusal at once, then call the
// agent in a goroutine of its own (goAgentThen), and once a result was
// answered run then, if not nil. Methods that also consult the running
// prompts (prompt, close, delete) or run inline (initialize, cancel) have
// shapes of their own.
func handle[P, R any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request, required bool,
	check func(*P) error, call func(P) (R, error), then func(P, R)) {
	p, err := decodeChecked(req, required, check)
	if err != nil {
		s.answers.reply(s.base, c, req, nil, err)
		return
	}
	var after func(R)
	if then != nil {
		after = func(r R) { then(p, r) }
	}
	goAgentThen(s, c, req, func() (R, error) { return call(p) }, after)
}

// decodeChecked decodes req's params into a P and, if they decode, checks
// them with check (if not nil).
func decodeChecked[P any](req *jsonrpc2.Request, required bool, check func(*P) error) (P, error) {
	var p P
	err := decodeParams(req, &p, required)
	if err == nil && check != nil {
		err = check(&p)
	}
	return p, err
}

// implemented returns the agent as A, the optional interface a method
// needs, or answers the request with method-not-found and false.
func implemented[A any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request) (A, bool) {
	a, ok := s.agent.(A)
	if !ok {
		s.answers.reply(s.base, c, req, nil, NewMethodNotFound(req.Method))
	}
	return a, ok
}

// goAgentThen runs call, a request to the agent, in a goroutine of its own
// (work that shutdown waits for), replies with its result and, once a
// result was answered, calls then(result) if then is not nil.
func goAgentThen[T any](s *Server, c *jsonrpc2.Conn, req *jsonrpc2.Request, call func() (T, error), then func(T)) {
	if !s.work.start() {
		s.answers.reply(s.base, c, req, nil, errShuttingDown)
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
	defer s.work.done()
	res, err := func() (_ T, err error) {
		defer recoverAgent(s.log, req.Method, &err)
		return call()
	}()
	s.answers.reply(context.WithoutCancel(s.base), c, req, res, err)
	if err == nil && then != nil {
		then(res)
	}
}

// recoverAgent turns a panic in the agent into an error reply: the editor
// gets an answer and the other sessions keep running, and the stack goes to
// the log.
func recoverAgent(log zerolog.Logger, method string, err *error) {
	if r := recover(); r != nil {
		log.Error().Str("method", method).Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg("acp: agent panicked")
		*err = fmt.Errorf("internal error in %s: %v", method, r)
	}
}
