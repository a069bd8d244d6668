package acp

import "context"

// Agent is what the server dispatches typed requests to. Implementations
// return plain Go errors; a *RequestError (possibly wrapped) chooses the wire
// error, anything else becomes -32603.
type Agent interface {
	NewSession(ctx context.Context, req NewSessionRequest) (NewSessionResponse, error)
	// LoadSession replays the committed conversation through c before it
	// returns.
	LoadSession(ctx context.Context, req LoadSessionRequest, c Client) (LoadSessionResponse, error)
	// Prompt runs one turn. ctx is cancelled with cause ErrCancelled on
	// session/cancel; the agent then answers {stopReason: "cancelled"}.
	Prompt(ctx context.Context, req PromptRequest, c Client) (PromptResponse, error)
}

// The session lifecycle methods beyond load are optional: an Agent that
// implements one of these interfaces serves its method, and initialize
// advertises it in sessionCapabilities. Without it the method is not found.
type (
	// SessionLister serves session/list: the sessions the agent knows,
	// newest first, a page at a time.
	SessionLister interface {
		ListSessions(ctx context.Context, req ListSessionsRequest) (ListSessionsResponse, error)
	}
	// SessionResumer serves session/resume: the session is opened again,
	// like session/load, but nothing is replayed.
	SessionResumer interface {
		ResumeSession(ctx context.Context, req ResumeSessionRequest) (ResumeSessionResponse, error)
	}
	// SessionCloser serves session/close. The server first cancels the
	// session's running turn (its cause is ErrSessionClosed) and waits for
	// its reply; CloseSession then frees what the session holds. Prompts
	// for the session are refused until it returns.
	SessionCloser interface {
		CloseSession(ctx context.Context, req CloseSessionRequest) (CloseSessionResponse, error)
	}
	// SessionDeleter serves session/delete. The server refuses it while a
	// turn of the session runs, and refuses prompts for the session until
	// DeleteSession returns.
	SessionDeleter interface {
		DeleteSession(ctx context.Context, req DeleteSessionRequest) (DeleteSessionResponse, error)
	}
	// SessionModeSetter serves session/set_mode, also while a turn of the
	// session runs (the change applies from its next model request). c
	// carries the updates the change sends.
	SessionModeSetter interface {
		SetSessionMode(ctx context.Context, req SetSessionModeRequest, c Client) (SetSessionModeResponse, error)
	}
	// SessionConfigSetter serves session/set_config_option, also while a
	// turn of the session runs.
	SessionConfigSetter interface {
		SetSessionConfigOption(ctx context.Context, req SetSessionConfigOptionRequest, c Client) (SetSessionConfigOptionResponse, error)
	}
	// SessionAnswerer is told when a session/new, load or resume was
	// answered with success, on the request's goroutine, after the answer
	// was queued: an update sent through c from then on comes after it, so
	// the client knows the session it is for. It must not block; ctx ends
	// at shutdown.
	SessionAnswerer interface {
		SessionAnswered(ctx context.Context, sessionID string, c Client)
	}
	// SessionReopener is told, once, that the client skipped initialize
	// (a respawn after a crash): from then on a session method naming a
	// session the agent does not hold opens it from where the agent keeps
	// it, instead of failing as not found.
	SessionReopener interface {
		ReopenOnUse()
	}
)

// Client is the agent's view of the editor for one request: where session
// updates go, what the editor said it can do, and the requests the agent
// may send it.
//
// The requests share these rules. They must not be made from the goroutine
// that serves the connection (Agent methods are never called there). When
// ctx ends before the answer, the call sends $/cancel_request and returns at
// once with an error that matches both context.Cause(ctx) and ctx.Err() with
// errors.Is. An error answer from the editor, or a result that is not what
// the method returns, is a *ClientError. A call the editor did not
// advertise in initialize is not sent and fails with ErrUnsupported; params
// the schema would reject are not sent either. A closed connection gives an
// error wrapping jsonrpc2.ErrClosed.
type Client interface {
	Update(ctx context.Context, sessionID string, u SessionUpdate) error
	Capabilities() ClientCapabilities

	// RequestPermission asks the user to allow a tool call. The response
	// is cancelled, or selected with one of req.Options.
	RequestPermission(ctx context.Context, req RequestPermissionRequest) (RequestPermissionResponse, error)
	// ReadTextFile needs fs.readTextFile.
	ReadTextFile(ctx context.Context, req ReadTextFileRequest) (ReadTextFileResponse, error)
	// WriteTextFile needs fs.writeTextFile.
	WriteTextFile(ctx context.Context, req WriteTextFileRequest) error
	// CreateTerminal and the other terminal calls need terminal.
	CreateTerminal(ctx context.Context, req CreateTerminalRequest) (CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req TerminalRequest) (TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req TerminalRequest) (TerminalExitStatus, error)
	KillTerminal(ctx context.Context, req TerminalRequest) error
	ReleaseTerminal(ctx context.Context, req TerminalRequest) error
}
