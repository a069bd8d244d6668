package acp

import (
	"context"
	"errors"

	"github.com/sourcegraph/jsonrpc2"
)

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
