package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/llm"
)

// Session modes: what the model is offered and which of its calls ask
// permission first.
const (
	// ModeAsk asks before every edit, write and command.
	ModeAsk = "ask"
	// ModeAcceptEdits edits and writes without asking; commands ask.
	ModeAcceptEdits = "accept_edits"
	// ModeReadOnly offers only the tools that read; a call to another is
	// refused.
	ModeReadOnly = "read_only"
	// ModeFullAccess asks for nothing.
	ModeFullAccess = "full_access"
)

// DefaultMode is the mode of a session nobody chose one for, unless
// agent.default_mode says otherwise.
const DefaultMode = ModeAsk

// ModeConfigID is the id of the configuration option that is the session's
// mode.
const ModeConfigID = "mode"

// Modes are the session modes, in the order an editor lists them.
var Modes = []acp.SessionMode{
	{ID: ModeAsk, Name: "Ask", Description: "Asks before every edit, file write, command and MCP tool call."},
	{ID: ModeAcceptEdits, Name: "Accept edits", Description: "Edits and writes files without asking; asks before commands and MCP tool calls."},
	{ID: ModeReadOnly, Name: "Read only", Description: "Reads and searches only: no edits, file writes, commands or MCP tools."},
	{ID: ModeFullAccess, Name: "Full access", Description: "Edits, writes files, runs commands and calls MCP tools without asking."},
}

// ValidMode reports whether id is one of Modes.
func ValidMode(id string) bool {
	return slices.ContainsFunc(Modes, func(m acp.SessionMode) bool { return m.ID == id })
}

// modeIDs are the ids of Modes, in order.
func modeIDs() []string {
	ids := make([]string, len(Modes))
	for i, m := range Modes {
		ids[i] = m.ID
	}
	return ids
}

// ModeIDs lists the ids of Modes, comma-separated, for messages.
func ModeIDs() string { return strings.Join(modeIDs(), ", ") }

// mutating are the tools read_only leaves out of the request.
var mutating = []string{tools.WriteFile, tools.EditFile, tools.RunCommand}

// toolsFor are the tool definitions a request in mode offers.
func toolsFor(mode string) []llm.ToolDef {
	defs := tools.Definitions()
	if mode != ModeReadOnly {
		return defs
	}
	return slices.DeleteFunc(defs, func(d llm.ToolDef) bool { return slices.Contains(mutating, d.Name) })
}

// decision is what a session's mode says about a call that changes
// something, before any standing answer of the user's is consulted.
type decision int

const (
	askUser decision = iota // ask, unless a standing answer covers it
	allow                   // go ahead without asking (a standing rejection still holds)
	refuse                  // the session is read-only
)

// modeDecision is what mode decides for a call needing permission in scope
// (scopeEdits, or a command's).
func modeDecision(mode, scope string) decision {
	switch mode {
	case ModeFullAccess:
		return allow
	case ModeAcceptEdits:
		if scope == scopeEdits {
			return allow
		}
	case ModeReadOnly:
		return refuse
	}
	return askUser
}

// readOnlyOutput is the result of a call the read-only mode refuses.
func readOnlyOutput(tool string) toolOutcome {
	return declined(fmt.Sprintf("This session is read-only: %s was not run. Only read_file, find_files, search_files and update_plan can be used; to change files or run commands, ask the user to switch the session to another mode.", tool),
		"Not run: the session is read-only")
}

// modeState is the session's mode as session/new, load and resume answer
// it.
func modeState(mode string) *acp.SessionModeState {
	return &acp.SessionModeState{CurrentModeID: mode, AvailableModes: slices.Clone(Modes)}
}
