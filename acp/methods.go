package acp

// Method names, client → agent.
const (
	MethodInitialize    = "initialize"
	MethodAuthenticate  = "authenticate"
	MethodSessionNew    = "session/new"
	MethodSessionLoad   = "session/load"
	MethodSessionPrompt = "session/prompt"
	MethodSessionCancel = "session/cancel"
	MethodCancelRequest = "$/cancel_request"
)

// Method names, agent → client.
const (
	MethodSessionUpdate = "session/update"
)
