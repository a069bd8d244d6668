package agent

import (
	"context"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rs/zerolog"
)

// toolRunner runs the tool calls of a turn's committed replies, with the
// permission gate in front of every call that changes something
// (tooluse.go, shell.go). It knows the editor only
// through the calls it makes, and the turn only through the functions it
// is given, so it can be tested with fakes.
type toolRunner struct {
	ed        toolEditor
	ws        *tools.Workspace
	sessionID string
	turn      int // the turn's number, for what is recorded
	// record appends an event to the session log, synced: it returns only
	// once the event is durable.
	record func(typ string, data any) error
	// notify sends a best-effort session update.
	notify func(ctx context.Context, u acp.SessionUpdate)
	// answered hands a result, as the model reads it, to the turn.
	answered func(llm.Message)
	// mode is the session's mode as the turn last read it.
	mode func() string
	// gate asks, or decides, before a call that changes something runs
	// (approval.go).
	gate    *permissionGate
	mcp     mcpCaller
	pending map[string]string // tool calls of the last committed reply without a result: id → the provider's id (ModelID)
	cfg     Tools
	secrets func() proc.Secrets // what a local command must not inherit
	log     *zerolog.Logger
}

// permissionAsker asks the user about a tool call.
type permissionAsker interface {
	RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
}

// editorFS reads and writes through the editor, which has the unsaved
// buffers.
type editorFS interface {
	ReadTextFile(ctx context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error)
	WriteTextFile(ctx context.Context, req acp.WriteTextFileRequest) error
}

// editorTerminal runs a command in a terminal of the editor's.
type editorTerminal interface {
	CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error)
	TerminalOutput(ctx context.Context, req acp.TerminalRequest) (acp.TerminalOutputResponse, error)
	WaitForTerminalExit(ctx context.Context, req acp.TerminalRequest) (acp.TerminalExitStatus, error)
	KillTerminal(ctx context.Context, req acp.TerminalRequest) error
	ReleaseTerminal(ctx context.Context, req acp.TerminalRequest) error
}

// toolEditor is what of the editor the runner uses; acp.Client is one.
type toolEditor interface {
	Capabilities() acp.ClientCapabilities
	permissionAsker
	editorFS
	editorTerminal
}

// mcpCaller routes a call to the session's MCP servers; *mcp.Set is one,
// nil included.
type mcpCaller interface {
	Lookup(name string) (server, tool string, ok bool)
	Call(ctx context.Context, name, arguments string) (mcp.Result, error)
}
