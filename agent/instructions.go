package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/llm"
)

// maxAgentsFileBytes bounds how much of a project's AGENTS.md goes into every
// request.
const maxAgentsFileBytes = 32 << 10

// The built-in system prompt: an introduction, the tools the session's
// mode offers, what asks permission in it, and how to work. The tool names
// are stable: users refer to them in their own instructions.
const (
	introInstructions = `You are Rebound, a coding agent working in the user's project through their editor. You help with software engineering tasks: reading and explaining code, fixing bugs, making changes, running builds and tests.`

	readToolsInstructions = `- read_file reads a text file (use offset and limit for long files). Read a file before you change it.
- find_files lists files matching a glob (files ignored by .gitignore are skipped); search_files finds a regular expression in files. Use them to find your way instead of guessing paths.`

	changeToolsInstructions = `- edit_file replaces old_text with new_text in a file; old_text must match the file exactly, once (add surrounding lines to make it unique, or set replace_all). Prefer it for changes to existing files.
- write_file writes a whole file; use it for new files or complete rewrites.`

	planToolInstructions = `- update_plan shows the user a short plan. Use it for work of several steps: set the plan when you start (a few one-line entries), mark an entry in_progress when you start it and completed as soon as it is done, and send the whole plan each time. Skip it for a single quick step.`

	mcpToolsInstructions = `- Tools named mcp__<server>__<tool> come from MCP servers the user added; use them as their descriptions say.`

	declineInstructions = ` If they decline, do not retry the same action: continue without it or ask what they want instead.`

	workInstructions = `Paths are relative to the working directory unless absolute, and must stay inside the workspace.

Work in small, verifiable steps. After changing code, run the relevant build or tests when you can. When you are done, say briefly what you changed and what you checked. Be concise; use Markdown for code.`
)

// permissionInstructions says what asks the user first in mode.
func permissionInstructions(mode string, withMCP bool) string {
	switch mode {
	case ModeAcceptEdits:
		if withMCP {
			return "Edits and writes are made without asking; the user is asked before every command and MCP tool call, and may decline." + declineInstructions
		}
		return "Edits and writes are made without asking; the user is asked before every command, and may decline." + declineInstructions
	case ModeFullAccess:
		return "Nothing asks the user first: take care with commands that change or delete things."
	case ModeReadOnly:
		return "This session is read-only: you cannot edit or write files or run commands. If the task needs that, say what you would change and ask the user to switch the session to another mode."
	}
	if withMCP {
		return "The user is asked before every edit, write, command and MCP tool call, and may decline." + declineInstructions
	}
	return "The user is asked before every edit, write and command, and may decline." + declineInstructions
}

// runCommandInstructions names the interpreter commands run with (sh -c,
// or cmd.exe /c on Windows), so that the model writes its syntax.
func runCommandInstructions(sh shell.Interp) string {
	return "- run_command runs a shell command (" + sh.Name + ") in the project, with a timeout; use it for builds, tests, git and other tools. Do not start servers or commands that never exit."
}

// baseInstructions is the built-in system prompt for a session in mode.
func baseInstructions(mode string, withMCP bool) string {
	var b strings.Builder
	b.WriteString(introInstructions + "\n\nTools:\n" + readToolsInstructions)
	if mode != ModeReadOnly {
		b.WriteString("\n" + changeToolsInstructions + "\n" + runCommandInstructions(shell.Platform))
		if withMCP {
			b.WriteString("\n" + mcpToolsInstructions)
		}
	}
	b.WriteString("\n" + planToolInstructions)
	b.WriteString("\n\n" + permissionInstructions(mode, withMCP) + " " + workInstructions)
	return b.String()
}

// systemPrompt makes the system prompt from the user's instructions
// (Config.Instructions, ReplaceInstructions).
type systemPrompt struct {
	instructions string
	replace      bool
	log          *zerolog.Logger
}

// messages is the system prompt of every request in the session: the
// instructions, the environment, and the project's AGENTS.md when it has one.
func (p systemPrompt) messages(s *sessionState, ws *tools.Workspace, mode string, withMCP bool, now time.Time) []llm.Message {
	var b strings.Builder
	if !p.replace || p.instructions == "" {
		b.WriteString(baseInstructions(mode, withMCP))
	}
	fmt.Fprintf(&b, "\n\nEnvironment:\n- Working directory: %s\n", s.dirs.cwd)
	if len(s.dirs.additional) > 0 {
		fmt.Fprintf(&b, "- Other workspace directories: %s\n", strings.Join(s.dirs.additional, ", "))
	}
	fmt.Fprintf(&b, "- Platform: %s\n- Date: %s\n", runtime.GOOS, now.Format("2006-01-02"))
	if p.instructions != "" {
		b.WriteString("\n" + strings.TrimSpace(p.instructions) + "\n")
	}
	if note := s.mcp.note(); note != "" {
		b.WriteString("\n" + note + "\n")
	}
	if text, err := readAgentsFile(ws); err != nil {
		p.log.Warn().Err(err).Str("session", s.id).Msg("AGENTS.md not used")
	} else if text != "" {
		fmt.Fprintf(&b, "\nThe project's instructions, from AGENTS.md:\n<agents_md>\n%s\n</agents_md>\n", strings.TrimSpace(text))
	}
	return []llm.Message{{Role: llm.RoleSystem, Content: strings.TrimRight(b.String(), "\n")}}
}

// readAgentsFile reads the project's AGENTS.md, bounded; "" when there is
// none. It obeys the tools' confinement: a link out of the workspace (to
// ~/.aws/credentials, /proc/self/environ) or anything but a regular file is
// refused, since the text goes to the provider with every request.
func readAgentsFile(ws *tools.Workspace) (string, error) {
	b, truncated, err := ws.ReadRegularFile(filepath.Join(ws.Cwd(), "AGENTS.md"), maxAgentsFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if truncated {
		return strings.ToValidUTF8(string(b), "") + "\n[AGENTS.md cut: only its first 32 KiB are used]", nil
	}
	return strings.ToValidUTF8(string(b), ""), nil
}
