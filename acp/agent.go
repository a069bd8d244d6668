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

// Client is the agent's view of the editor for one request: where session
// updates go and what the editor said it can do.
type Client interface {
	Update(ctx context.Context, sessionID string, u SessionUpdate) error
	Capabilities() ClientCapabilities
}
