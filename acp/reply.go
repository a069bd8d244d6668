package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

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

// RPCLogger adapts zerolog to jsonrpc2.Logger at Warn level:
// (*zerolog.Logger).Printf logs at Debug, which would hide jsonrpc2's
// protocol errors.
type RPCLogger struct{ L zerolog.Logger }

func (l RPCLogger) Printf(format string, v ...any) {
	l.L.Warn().Msg(strings.TrimSuffix(fmt.Sprintf(format, v...), "\n"))
}
