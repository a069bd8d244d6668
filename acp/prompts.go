package acp

import (
	"context"
	"errors"

	"github.com/sourcegraph/jsonrpc2"
)

// runningPrompt is one running session/prompt, an entry of Server.prompts;
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
	t := s.prompts[p.SessionID]
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
	deleter, ok := implemented[SessionDeleter](s, c, req)
	if !ok {
		return
	}
	p, err := decodeChecked(req, true, func(p *DeleteSessionRequest) error { return checkSessionID(p.SessionID) })
	if err != nil {
		s.reply(s.base, c, req, nil, err)
		return
	}
	s.mu.Lock()
	switch {
	case s.stopping:
		err = errShuttingDown
	case s.prompts[p.SessionID] != nil:
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

func (s *Server) doneClosing(sessionID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing[sessionID]--; s.closing[sessionID] <= 0 {
		delete(s.closing, sessionID)
	}
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
	prev := s.prompts[sessionID]
	if prev != nil && !prev.ending {
		return nil, nil, nil, NewSessionBusy(sessionID)
	}
	ctx, cancel := context.WithCancelCause(s.base)
	t := &runningPrompt{cancel: cancel, done: make(chan struct{})}
	s.prompts[sessionID] = t
	s.work.Add(1)
	return ctx, t, prev, nil
}

func (s *Server) endTurn(sessionID string, t *runningPrompt) {
	s.mu.Lock()
	if s.prompts[sessionID] == t {
		delete(s.prompts, sessionID)
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
	t := s.prompts[p.SessionID]
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
