package acp

import (
	"errors"
	"fmt"
)

// JSON-RPC and ACP error codes.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeRequestCancelled = -32800
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)

// ErrCancelled is the cancel cause of a turn stopped by session/cancel.
var ErrCancelled = errors.New("cancelled by session/cancel")

// RequestError is an error with a chosen wire shape. Agents return (or wrap)
// it; the server finds it with errors.As and sends Code, Message and Data.
type RequestError struct {
	Code    int
	Message string
	Data    any
	Err     error // the cause, kept for logs; not sent
}

func (e *RequestError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *RequestError) Unwrap() error { return e.Err }

func NewInvalidParams(format string, args ...any) *RequestError {
	return &RequestError{Code: CodeInvalidParams, Message: "Invalid params: " + fmt.Sprintf(format, args...)}
}

func NewSessionNotFound(sessionID string) *RequestError {
	return &RequestError{Code: CodeResourceNotFound, Message: "Session not found: " + sessionID,
		Data: map[string]any{"sessionId": sessionID}}
}

func NewAuthRequired(message string) *RequestError {
	return &RequestError{Code: CodeAuthRequired, Message: message}
}
