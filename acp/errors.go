package acp

import (
	"errors"
	"fmt"
	"strings"
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
	// CodeSessionBusy refuses a session/prompt while the session's turn is
	// still running. ACP defines no code for it; a server-range code with
	// data.reason "session_busy" lets a client tell busy from broken (and
	// matches what other ACP agents send), which -32603 would not.
	CodeSessionBusy = -32003
)

// ErrCancelled is the cancel cause of a turn stopped by session/cancel.
// Test for it with errors.Is: ErrShutdown wraps it.
var ErrCancelled = errors.New("cancelled by session/cancel")

// ErrShutdown is the cancel cause of turns still running when Serve stops
// (the input ended or Serve's ctx was done). It wraps ErrCancelled because
// the turn ends the same way: settled as cancelled.
var ErrShutdown = fmt.Errorf("%w: the connection is shutting down", ErrCancelled)

// ErrSessionClosed is the cancel cause of a turn stopped by session/close.
// It wraps ErrCancelled: the turn is answered as cancelled.
var ErrSessionClosed = fmt.Errorf("%w: the session was closed (session/close)", ErrCancelled)

// RequestError is an ACP (JSON-RPC) error with a chosen wire shape: what
// the server answers a request from the editor with. Agents return (or
// wrap) it; the server finds it with errors.As and sends Code, Message and
// Data. Not to be confused with the provider layer's error for a failed
// model request (package llm): this one is only ever sent to the editor.
type RequestError struct {
	Code    int
	Message string
	Data    any
	Err     error // the cause, kept for logs; not sent
}

func (e *RequestError) Error() string {
	// The message is often written from the cause already: a log line that
	// repeated it would say the same thing twice.
	if e.Err != nil && !strings.Contains(e.Message, strings.TrimSpace(e.Err.Error())) && !strings.Contains(e.Err.Error(), e.Message) {
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

func NewMethodNotFound(method string) *RequestError {
	return &RequestError{Code: CodeMethodNotFound, Message: "Method not found: " + method,
		Data: map[string]any{"method": method}}
}

func NewSessionBusy(sessionID string) *RequestError {
	return &RequestError{Code: CodeSessionBusy,
		Message: "A turn is already running in session " + sessionID + "; wait for its reply or send session/cancel",
		Data:    map[string]any{"sessionId": sessionID, "reason": "session_busy"}}
}

// NewSessionRunning refuses what can't be done while a turn of the session
// runs (session/delete): the code and data.reason of NewSessionBusy, and
// what to do first.
func NewSessionRunning(sessionID, method string) *RequestError {
	return &RequestError{Code: CodeSessionBusy,
		Message: "A turn is running in session " + sessionID + "; " + method + " needs it to end first: send session/cancel and wait for the prompt's reply, or use session/close",
		Data:    map[string]any{"sessionId": sessionID, "reason": "session_busy"}}
}

// NewSessionClosing refuses a prompt for a session that session/close or
// session/delete is taking away.
func NewSessionClosing(sessionID string) *RequestError {
	return &RequestError{Code: CodeResourceNotFound,
		Message: "Session " + sessionID + " is being closed; load or resume it to go on",
		Data:    map[string]any{"sessionId": sessionID, "reason": "session_closing"}}
}
