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

// replyConn is the side of a jsonrpc2.Conn a replier answers on.
type replyConn interface {
	Reply(ctx context.Context, id jsonrpc2.ID, result any) error
	ReplyWithError(ctx context.Context, id jsonrpc2.ID, respErr *jsonrpc2.Error) error
}

// replier answers requests, mapping an error to its wire error here and
// nowhere else, and logs what failed.
type replier struct {
	log zerolog.Logger
	// rich reports whether the client gets an error's data
	// (ClientCapabilities.RichErrors), asked at each reply: initialize
	// may come after the first request.
	rich func() bool
	// idText is a request's id as the client sent it, for logs.
	idText func(jsonrpc2.ID) string
}

// reply answers req once.
func (r replier) reply(ctx context.Context, c replyConn, req *jsonrpc2.Request, res any, err error) {
	var raw json.RawMessage
	if err == nil {
		if raw, err = json.Marshal(res); err != nil {
			err = fmt.Errorf("encode %s result: %w", req.Method, err)
		}
	}
	var sendErr error
	if err != nil {
		werr := wireError(err, r.rich())
		ev := r.log.Debug()
		if werr.Code == CodeInternalError {
			ev = r.log.Warn()
		}
		// The data goes to the log whether or not the client is sent it.
		if re, ok := errors.AsType[*RequestError](err); ok && re.Data != nil {
			ev = ev.Interface("data", re.Data)
		}
		ev.Err(err).Str("method", req.Method).Str("id", r.idText(req.ID)).Int64("code", werr.Code).Msg("acp: request failed")
		sendErr = c.ReplyWithError(ctx, req.ID, werr)
	} else {
		sendErr = c.Reply(ctx, req.ID, raw)
	}
	// ErrClosed means the client went away, errStreamClosed that shutdown
	// gave up on the output; there is no one to tell.
	if sendErr != nil && !errors.Is(sendErr, jsonrpc2.ErrClosed) && !errors.Is(sendErr, errStreamClosed) {
		r.log.Warn().Err(sendErr).Str("method", req.Method).Msg("acp: reply not sent")
	}
}

// MetaRetry is the _meta key of Rebound's retry progress, which a client
// that reads it names in clientCapabilities._meta.
const MetaRetry = "rebound/retry"

// wireError maps an error to its JSON-RPC error; data only when withData
// (the client's RichErrors): the message says what a person needs, and the
// facts in data are for programs. auth_required keeps its data (the
// methods to sign in with) for every client: Zed shows that error's
// message alone and opens its sign-in from the methods, and programs
// (the SDK's clients) read them there. errors.As (not a type assertion, as
// jsonrpc2.HandlerWithError does) so a wrapped *RequestError keeps its code.
func wireError(err error, withData bool) *jsonrpc2.Error {
	if re, ok := errors.AsType[*RequestError](err); ok {
		e := &jsonrpc2.Error{Code: int64(re.Code), Message: re.Message}
		if re.Data != nil && (withData || re.Code == CodeAuthRequired) {
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
