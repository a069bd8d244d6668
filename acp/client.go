package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/sourcegraph/jsonrpc2"
)

// PermissionOptionKind hints how a client presents a permission option.
type PermissionOptionKind string

const (
	PermissionAllowOnce    PermissionOptionKind = "allow_once"
	PermissionAllowAlways  PermissionOptionKind = "allow_always"
	PermissionRejectOnce   PermissionOptionKind = "reject_once"
	PermissionRejectAlways PermissionOptionKind = "reject_always"
)

// PermissionOption is one choice offered to the user.
type PermissionOption struct {
	OptionID string               `json:"optionId"`
	Name     string               `json:"name"`
	Kind     PermissionOptionKind `json:"kind"`
	Meta     Meta                 `json:"_meta,omitempty"`
}

// RequestPermissionRequest is the params of session/request_permission.
type RequestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  ToolCallUpdate     `json:"toolCall"`
	Options   []PermissionOption `json:"options"`
	Meta      Meta               `json:"_meta,omitempty"`
}

// PermissionOutcome is what became of a permission request.
type PermissionOutcome string

const (
	// PermissionCancelled: the turn was cancelled before the user chose.
	PermissionCancelled PermissionOutcome = "cancelled"
	// PermissionSelected: the user chose the option in OptionID.
	PermissionSelected PermissionOutcome = "selected"
)

// RequestPermissionOutcome is the outcome member of the response.
type RequestPermissionOutcome struct {
	Outcome  PermissionOutcome `json:"outcome"`
	OptionID string            `json:"optionId,omitempty"` // set when selected
	Meta     Meta              `json:"_meta,omitempty"`
}

// RequestPermissionResponse is the result of session/request_permission.
// RequestPermission only returns one whose outcome is cancelled, or
// selected with one of the options offered.
type RequestPermissionResponse struct {
	Outcome RequestPermissionOutcome `json:"outcome"`
	Meta    Meta                     `json:"_meta,omitempty"`
}

// Selected returns the option the user chose, if they chose one.
func (r RequestPermissionResponse) Selected() (optionID string, ok bool) {
	if r.Outcome.Outcome != PermissionSelected {
		return "", false
	}
	return r.Outcome.OptionID, true
}

// ReadTextFileRequest is the params of fs/read_text_file.
type ReadTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`            // absolute
	Line      *int   `json:"line,omitempty"`  // 1-based first line; nil: the start
	Limit     *int   `json:"limit,omitempty"` // most lines to read; nil: all
	Meta      Meta   `json:"_meta,omitempty"`
}

// ReadTextFileResponse is the result of fs/read_text_file.
type ReadTextFileResponse struct {
	Content string `json:"content"`
	Meta    Meta   `json:"_meta,omitempty"`
}

// WriteTextFileRequest is the params of fs/write_text_file.
type WriteTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"` // absolute
	Content   string `json:"content"`
	Meta      Meta   `json:"_meta,omitempty"`
}

// EnvVariable is one environment variable of a terminal command.
type EnvVariable struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Meta  Meta   `json:"_meta,omitempty"`
}

// CreateTerminalRequest is the params of terminal/create.
type CreateTerminalRequest struct {
	SessionID string        `json:"sessionId"`
	Command   string        `json:"command"`
	Args      []string      `json:"args,omitempty"`
	Env       []EnvVariable `json:"env,omitempty"`
	Cwd       string        `json:"cwd,omitempty"` // absolute; empty: the client's choice
	// OutputByteLimit caps the output the client keeps (it drops the
	// beginning); nil: the client's default.
	OutputByteLimit *int64 `json:"outputByteLimit,omitempty"`
	Meta            Meta   `json:"_meta,omitempty"`
}

// CreateTerminalResponse is the result of terminal/create.
type CreateTerminalResponse struct {
	TerminalID string `json:"terminalId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// TerminalRequest is the params of terminal/output, terminal/wait_for_exit,
// terminal/kill and terminal/release, which all name a terminal.
type TerminalRequest struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

// TerminalExitStatus is how a terminal command ended: an exit code, or the
// signal that killed it. It is also the result of terminal/wait_for_exit.
type TerminalExitStatus struct {
	ExitCode *int    `json:"exitCode,omitempty"`
	Signal   *string `json:"signal,omitempty"`
	Meta     Meta    `json:"_meta,omitempty"`
}

// TerminalOutputResponse is the result of terminal/output.
type TerminalOutputResponse struct {
	Output     string              `json:"output"`
	Truncated  bool                `json:"truncated"`
	ExitStatus *TerminalExitStatus `json:"exitStatus,omitempty"` // nil while it runs
	Meta       Meta                `json:"_meta,omitempty"`
}

// CancelRequestNotification is the params of $/cancel_request.
type CancelRequestNotification struct {
	RequestID jsonrpc2.ID `json:"requestId"`
	Meta      Meta        `json:"_meta,omitempty"`
}

// ClientError is a call to the client that failed on the client's side:
// the client answered with a JSON-RPC error (Code, Message, Data are its),
// or with a result that is not what the method returns (Err is
// ErrInvalidResult, Code is 0, Message says what is wrong). Either way it
// reads well as a tool failure shown to the model.
type ClientError struct {
	Method  string
	Code    int64
	Message string
	Data    json.RawMessage
	Err     error // ErrInvalidResult for a malformed result; nil otherwise
}

// ErrInvalidResult is wrapped by the *ClientError of a result that does not
// decode into the method's result type or misses what it requires.
var ErrInvalidResult = errors.New("invalid result")

func (e *ClientError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("the editor answered %s with an invalid result: %s", e.Method, e.Message)
	}
	if e.Message == "" {
		return fmt.Sprintf("the editor refused %s (code %d)", e.Method, e.Code)
	}
	return fmt.Sprintf("the editor refused %s: %s (code %d)", e.Method, e.Message, e.Code)
}

func (e *ClientError) Unwrap() error { return e.Err }

// ErrUnsupported is wrapped by the error of a call the client did not
// advertise in initialize (fs.readTextFile, fs.writeTextFile, terminal).
// Such a call is not sent: the spec forbids it.
var ErrUnsupported = errors.New("not advertised by the editor")

// abandonedError is a call whose ctx ended before the client answered. It
// matches both the cancel cause and ctx.Err() with errors.Is, so callers
// can test for ErrCancelled as well as context.Canceled.
type abandonedError struct {
	method string
	cause  error
	ctxErr error
}

func (e *abandonedError) Error() string {
	return fmt.Sprintf("%s abandoned: %v", e.method, e.cause)
}

func (e *abandonedError) Unwrap() []error { return []error{e.cause, e.ctxErr} }

func abandoned(ctx context.Context, method string) error {
	return &abandonedError{method: method, cause: context.Cause(ctx), ctxErr: ctx.Err()}
}

// RequestPermission asks the user to allow a tool call.
func (cl editorConn) RequestPermission(ctx context.Context, req RequestPermissionRequest) (RequestPermissionResponse, error) {
	const m = MethodSessionRequestPermission
	if err := checkPermissionRequest(req); err != nil {
		return RequestPermissionResponse{}, badRequest(m, err)
	}
	return call(ctx, cl, m, req, func(raw []byte) (RequestPermissionResponse, error) {
		var r RequestPermissionResponse
		if err := decodeResult(raw, &r); err != nil {
			return r, err
		}
		switch r.Outcome.Outcome {
		case PermissionCancelled:
			r.Outcome.OptionID = ""
		case PermissionSelected:
			if r.Outcome.OptionID == "" {
				return r, errors.New("outcome.optionId is required when the outcome is selected")
			}
			for _, o := range req.Options {
				if o.OptionID == r.Outcome.OptionID {
					return r, nil
				}
			}
			return r, fmt.Errorf("outcome.optionId %q is not one of the options offered", r.Outcome.OptionID)
		case "":
			return r, errors.New("outcome.outcome is required")
		default:
			return r, fmt.Errorf(`outcome.outcome must be "cancelled" or "selected", not %q`, r.Outcome.Outcome)
		}
		return r, nil
	})
}

// ReadTextFile reads a text file through the editor, unsaved changes
// included. Needs clientCapabilities.fs.readTextFile.
func (cl editorConn) ReadTextFile(ctx context.Context, req ReadTextFileRequest) (ReadTextFileResponse, error) {
	const m = MethodFSReadTextFile
	if !cl.Capabilities().FS.ReadTextFile {
		return ReadTextFileResponse{}, unsupported(m, "fs.readTextFile")
	}
	if err := checkReadRequest(req); err != nil {
		return ReadTextFileResponse{}, badRequest(m, err)
	}
	return call(ctx, cl, m, req, func(raw []byte) (ReadTextFileResponse, error) {
		var r struct {
			Content *string `json:"content"`
			Meta    Meta    `json:"_meta"`
		}
		if err := decodeResult(raw, &r); err != nil {
			return ReadTextFileResponse{}, err
		}
		if r.Content == nil {
			return ReadTextFileResponse{}, errors.New("content is required")
		}
		return ReadTextFileResponse{Content: *r.Content, Meta: r.Meta}, nil
	})
}

// WriteTextFile writes a text file through the editor. Needs
// clientCapabilities.fs.writeTextFile.
func (cl editorConn) WriteTextFile(ctx context.Context, req WriteTextFileRequest) error {
	const m = MethodFSWriteTextFile
	if !cl.Capabilities().FS.WriteTextFile {
		return unsupported(m, "fs.writeTextFile")
	}
	if err := checkSessionPath(req.SessionID, req.Path); err != nil {
		return badRequest(m, err)
	}
	_, err := call(ctx, cl, m, req, decodeEmpty)
	return err
}

// CreateTerminal starts a command in a terminal the editor owns. Needs
// clientCapabilities.terminal. Release the terminal when done with it.
func (cl editorConn) CreateTerminal(ctx context.Context, req CreateTerminalRequest) (CreateTerminalResponse, error) {
	const m = MethodTerminalCreate
	if !cl.Capabilities().Terminal {
		return CreateTerminalResponse{}, unsupported(m, "terminal")
	}
	if err := checkCreateTerminal(req); err != nil {
		return CreateTerminalResponse{}, badRequest(m, err)
	}
	return call(ctx, cl, m, req, func(raw []byte) (CreateTerminalResponse, error) {
		var r CreateTerminalResponse
		if err := decodeResult(raw, &r); err != nil {
			return r, err
		}
		if r.TerminalID == "" {
			return r, errors.New("terminalId is required")
		}
		return r, nil
	})
}

// TerminalOutput returns a terminal's output so far, and its exit status
// once the command has ended. Needs clientCapabilities.terminal.
func (cl editorConn) TerminalOutput(ctx context.Context, req TerminalRequest) (TerminalOutputResponse, error) {
	const m = MethodTerminalOutput
	if err := cl.checkTerminal(m, req); err != nil {
		return TerminalOutputResponse{}, err
	}
	return call(ctx, cl, m, req, func(raw []byte) (TerminalOutputResponse, error) {
		var r struct {
			Output     *string             `json:"output"`
			Truncated  *bool               `json:"truncated"`
			ExitStatus *TerminalExitStatus `json:"exitStatus"`
			Meta       Meta                `json:"_meta"`
		}
		if err := decodeResult(raw, &r); err != nil {
			return TerminalOutputResponse{}, err
		}
		switch {
		case r.Output == nil:
			return TerminalOutputResponse{}, errors.New("output is required")
		case r.Truncated == nil:
			return TerminalOutputResponse{}, errors.New("truncated is required")
		}
		return TerminalOutputResponse{Output: *r.Output, Truncated: *r.Truncated, ExitStatus: r.ExitStatus, Meta: r.Meta}, nil
	})
}

// WaitForTerminalExit waits until a terminal's command ends. Needs
// clientCapabilities.terminal. Cancel ctx to stop waiting (a timeout, then
// KillTerminal, is the usual pattern).
func (cl editorConn) WaitForTerminalExit(ctx context.Context, req TerminalRequest) (TerminalExitStatus, error) {
	const m = MethodTerminalWaitForExit
	if err := cl.checkTerminal(m, req); err != nil {
		return TerminalExitStatus{}, err
	}
	return call(ctx, cl, m, req, func(raw []byte) (TerminalExitStatus, error) {
		var r TerminalExitStatus
		return r, decodeResult(raw, &r)
	})
}

// KillTerminal kills a terminal's command; the terminal stays until
// released. Needs clientCapabilities.terminal.
func (cl editorConn) KillTerminal(ctx context.Context, req TerminalRequest) error {
	const m = MethodTerminalKill
	if err := cl.checkTerminal(m, req); err != nil {
		return err
	}
	_, err := call(ctx, cl, m, req, decodeEmpty)
	return err
}

// ReleaseTerminal kills a terminal's command if it still runs and frees the
// terminal. Needs clientCapabilities.terminal.
func (cl editorConn) ReleaseTerminal(ctx context.Context, req TerminalRequest) error {
	const m = MethodTerminalRelease
	if err := cl.checkTerminal(m, req); err != nil {
		return err
	}
	_, err := call(ctx, cl, m, req, decodeEmpty)
	return err
}

func (cl editorConn) checkTerminal(method string, req TerminalRequest) error {
	if !cl.Capabilities().Terminal {
		return unsupported(method, "terminal")
	}
	switch {
	case req.SessionID == "":
		return badRequest(method, errors.New("sessionId is required"))
	case req.TerminalID == "":
		return badRequest(method, errors.New("terminalId is required"))
	}
	return nil
}

// call sends one request to the client and waits for its answer; decode
// turns the raw result into R or says why it can't.
//
// The request id is picked here (jsonrpc2.PickID) so that it is known for
// $/cancel_request. When ctx ends first, call sends $/cancel_request and
// returns at once; it does not wait for the client. The client's late
// answer (ACP wants -32800, or the real result) is then dropped by
// jsonrpc2 without a log line: Waiter.Wait leaves the call pending, so the
// response still finds it and is delivered to a buffered channel nobody
// reads. The cost is that entry (the request and its params) staying in
// the connection's pending map until the answer comes or the connection
// closes; a client that never answers a cancelled request keeps it for the
// session.
func call[R any](ctx context.Context, cl editorConn, method string, params any, decode func(raw []byte) (R, error)) (R, error) {
	var zero R
	if ctx.Err() != nil {
		return zero, abandoned(ctx, method)
	}
	id := jsonrpc2.ID{Num: cl.s.nextCallID.Add(1)} // from 1: jsonrpc2 takes 0 as "no id picked"
	log := cl.s.log.With().Str("method", method).Stringer("id", id).Logger()
	log.Debug().Msg("acp: calling the client")
	// The send itself is not cancellable (jsonrpc2 ignores its ctx); the
	// write to the client is not waiting for the client.
	w, err := cl.c.DispatchCall(context.WithoutCancel(ctx), method, params, jsonrpc2.PickID(id))
	if err != nil {
		if errors.Is(err, jsonrpc2.ErrClosed) {
			return zero, fmt.Errorf("%s not sent: %w", method, err)
		}
		return zero, fmt.Errorf("send %s: %w", method, err)
	}
	var raw json.RawMessage
	err = w.Wait(ctx, &raw)
	if ctxErr := ctx.Err(); ctxErr != nil && err == ctxErr {
		err := abandoned(ctx, method)
		log.Debug().Err(err).Msg("acp: client call abandoned; sending $/cancel_request")
		nerr := cl.c.Notify(context.WithoutCancel(ctx), MethodCancelRequest, CancelRequestNotification{RequestID: id})
		if nerr != nil && !errors.Is(nerr, jsonrpc2.ErrClosed) {
			log.Warn().Err(nerr).Msg("acp: $/cancel_request not sent")
		}
		return zero, err
	}
	if err != nil {
		if rerr, ok := errors.AsType[*jsonrpc2.Error](err); ok {
			ce := &ClientError{Method: method, Code: rerr.Code, Message: rerr.Message}
			if rerr.Data != nil {
				ce.Data = *rerr.Data
			}
			log.Debug().Int64("code", rerr.Code).Str("message", rerr.Message).Msg("acp: the client answered with an error")
			return zero, ce
		}
		if errors.Is(err, jsonrpc2.ErrClosed) {
			return zero, fmt.Errorf("%s not answered: %w", method, err)
		}
		return zero, fmt.Errorf("%s: %w", method, err)
	}
	res, err := decode(raw)
	if err != nil {
		ev := log.Warn().Err(err)
		if method != MethodElicitationCreate { // a form's answer may hold a key
			ev = ev.Bytes("result", truncate(raw, 512))
		}
		ev.Msg("acp: invalid result from the client")
		return zero, &ClientError{Method: method, Message: err.Error(), Err: ErrInvalidResult}
	}
	return res, nil
}

func truncate(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[:n]
}

// decodeResult decodes a result that must be a JSON object into v; a type
// error names the member.
func decodeResult(raw []byte, v any) error {
	if c := firstByte(raw); c != '{' {
		return fmt.Errorf("the result must be an object, not %s", jsonValueKind(c))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return errors.New(describeJSONError(err, "", "result"))
	}
	return nil
}

// decodeEmpty accepts the result of a method that returns nothing: an
// object (its members are ignored) or null, which some clients send.
func decodeEmpty(raw []byte) (struct{}, error) {
	switch c := firstByte(raw); c {
	case '{', 'n':
		return struct{}{}, nil
	default:
		return struct{}{}, fmt.Errorf("the result must be an object, not %s", jsonValueKind(c))
	}
}

// jsonValueKind names the kind of a JSON value from its first byte.
func jsonValueKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	}
	return "number"
}

func unsupported(method, capability string) error {
	return fmt.Errorf("%s not sent: %w (clientCapabilities.%s)", method, ErrUnsupported, capability)
}

// badRequest is a request the agent got wrong; it is not sent.
func badRequest(method string, err error) error {
	return fmt.Errorf("%s not sent: invalid params: %w", method, err)
}

func checkSessionPath(sessionID, path string) error {
	switch {
	case sessionID == "":
		return errors.New("sessionId is required")
	case path == "":
		return errors.New("path is required")
	case !filepath.IsAbs(path):
		return fmt.Errorf("path must be absolute, got %q", path)
	}
	return nil
}

func checkReadRequest(req ReadTextFileRequest) error {
	if err := checkSessionPath(req.SessionID, req.Path); err != nil {
		return err
	}
	if req.Line != nil && (*req.Line < 1 || *req.Line > math.MaxUint32) {
		return fmt.Errorf("line is 1-based, got %d", *req.Line)
	}
	if req.Limit != nil && (*req.Limit < 0 || *req.Limit > math.MaxUint32) {
		return fmt.Errorf("limit must be between 0 and %d, got %d", uint32(math.MaxUint32), *req.Limit)
	}
	return nil
}

func checkCreateTerminal(req CreateTerminalRequest) error {
	switch {
	case req.SessionID == "":
		return errors.New("sessionId is required")
	case req.Command == "":
		return errors.New("command is required")
	case req.Cwd != "" && !filepath.IsAbs(req.Cwd):
		return fmt.Errorf("cwd must be absolute, got %q", req.Cwd)
	case req.OutputByteLimit != nil && *req.OutputByteLimit < 0:
		return fmt.Errorf("outputByteLimit must not be negative, got %d", *req.OutputByteLimit)
	}
	for i, e := range req.Env {
		if e.Name == "" {
			return fmt.Errorf("env[%d].name is required", i)
		}
	}
	return nil
}

func checkPermissionRequest(req RequestPermissionRequest) error {
	switch {
	case req.SessionID == "":
		return errors.New("sessionId is required")
	case req.ToolCall.ToolCallID == "":
		return errors.New("toolCall.toolCallId is required")
	case len(req.Options) == 0:
		return errors.New("options must offer at least one choice")
	}
	seen := map[string]bool{}
	for i, o := range req.Options {
		switch {
		case o.OptionID == "":
			return fmt.Errorf("options[%d].optionId is required", i)
		case seen[o.OptionID]:
			return fmt.Errorf("options[%d].optionId %q is offered twice", i, o.OptionID)
		case o.Name == "":
			return fmt.Errorf("options[%d].name is required", i)
		}
		switch o.Kind {
		case PermissionAllowOnce, PermissionAllowAlways, PermissionRejectOnce, PermissionRejectAlways:
		default:
			return fmt.Errorf("options[%d].kind %q is not allow_once, allow_always, reject_once or reject_always", i, o.Kind)
		}
		seen[o.OptionID] = true
	}
	return nil
}
