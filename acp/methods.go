package acp

// Method names, client → agent.
const (
	MethodInitialize   = "initialize"
	MethodAuthenticate = "authenticate"
	// MethodLogout signs out; advertised as agentCapabilities.auth.logout.
	MethodLogout        = "logout"
	MethodSessionNew    = "session/new"
	MethodSessionLoad   = "session/load"
	MethodSessionPrompt = "session/prompt"
	MethodSessionCancel = "session/cancel"
	MethodSessionList   = "session/list"
	MethodSessionResume = "session/resume"
	MethodSessionClose  = "session/close"
	MethodSessionDelete = "session/delete"
	// MethodSessionSetMode and MethodSessionSetConfigOption change a
	// session's mode and its configuration options.
	MethodSessionSetMode         = "session/set_mode"
	MethodSessionSetConfigOption = "session/set_config_option"
)

// Method names, agent → client (meta.json clientMethods).
const (
	MethodSessionUpdate            = "session/update"
	MethodSessionRequestPermission = "session/request_permission"
	MethodFSReadTextFile           = "fs/read_text_file"
	MethodFSWriteTextFile          = "fs/write_text_file"
	MethodTerminalCreate           = "terminal/create"
	MethodTerminalOutput           = "terminal/output"
	MethodTerminalWaitForExit      = "terminal/wait_for_exit"
	MethodTerminalKill             = "terminal/kill"
	MethodTerminalRelease          = "terminal/release"
)

// Method names, either direction (meta.json protocolMethods).
const (
	MethodCancelRequest = "$/cancel_request"
)
