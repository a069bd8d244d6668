package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// What a person approves must be exactly what runs: a permission request
// shows the whole of it (a command and its directory, an MCP call's
// arguments) in the request's content, never only a title cut to one line,
// and its rawInput is the decoded input that runs, never the model's text,
// which may say one thing to a reader and another to the decoder.

// approval is what one permission request asks about.
type approval struct {
	// scope is what a standing answer covers: scopeEdits, a command in a
	// directory, or one MCP tool.
	scope string
	// preview is shown whole in the request: the diff, the command, the
	// arguments.
	preview []acp.ToolCallContent
	// input is the request's rawInput: what runs, decoded.
	input json.RawMessage
	// title replaces the call's title in the request: what a client that
	// shows only the title shows (tools.CommandTitle, tools.MCPTitle).
	title string
	// protected, when set, says why this call asks in every mode but
	// full_access, whatever was answered before: it writes where a program
	// could be made to run. No standing answer is offered for it.
	protected string
}

// permissionGate decides whether a tool call that changes something may
// run: by the session's mode, a standing answer, or the user's answer to a
// request, which is recorded before it takes effect.
type permissionGate struct {
	asker     permissionAsker
	sessionID string
	turn      int
	record    func(typ string, data any) error // appends to the session log, synced
	mode      func() string
	rules     func() map[string]string // standing answers by scope
	log       *zerolog.Logger
}

// permit asks the user, unless the session's mode or a standing answer
// decides: read_only refuses, a standing rejection holds in every other
// mode, accept_edits allows edits and full_access everything, a standing
// allowance allows. A protected write asks in every mode but full_access
// and offers no standing answer. ok reports whether the call may go ahead;
// when it may not, out is its result, and err is set when the user
// cancelled the turn instead of answering.
func (g *permissionGate) permit(ctx context.Context, call session.MessageToolCall, info tools.Info, ap approval) (ok bool, out toolOutcome, err error) {
	scope := ap.scope
	always, never, declinedText, declinedAlways := "Always allow edits in this session", "Always reject edits in this session",
		"The user declined this change.", "The user has declined all edits for this session."
	switch {
	case strings.HasPrefix(scope, "mcp:"):
		always, never, declinedText, declinedAlways = "Always allow this tool", "Always reject this tool",
			"The user declined this tool call.", "The user has declined this tool for this session."
	case scope != scopeEdits:
		always, never, declinedText, declinedAlways = "Always allow this command in this directory", "Always reject this command in this directory",
			"The user declined to run this command.", "The user has declined this command for this session."
	}
	d := modeDecision(g.mode(), scope)
	if d == refuse {
		return false, readOnlyOutput(call.Name), nil
	}
	switch g.rules()[scope] {
	case session.AllowAlways:
		if ap.protected == "" || g.mode() == ModeFullAccess {
			return true, toolOutcome{}, nil
		}
	case session.RejectAlways:
		return false, declined(declinedAlways+" Do not try again; continue without it or ask the user how to proceed.", "Rejected: you chose to always reject this in this session"), nil
	}
	if d == allow && (ap.protected == "" || g.mode() == ModeFullAccess) {
		return true, toolOutcome{}, nil
	}
	preview := ap.preview
	options := []acp.PermissionOption{
		{OptionID: session.AllowOnce, Name: "Allow", Kind: acp.PermissionAllowOnce},
		{OptionID: session.AllowAlways, Name: always, Kind: acp.PermissionAllowAlways},
		{OptionID: session.RejectOnce, Name: "Reject", Kind: acp.PermissionRejectOnce},
		{OptionID: session.RejectAlways, Name: never, Kind: acp.PermissionRejectAlways},
	}
	title := cmp.Or(ap.title, info.Title)
	if ap.protected != "" {
		// After the diff: a client that shows one diff looks only at the
		// first content (codecompanion.nvim); the title says it too.
		note := protectedNote(ap.protected)
		preview = append(slices.Clip(preview), note)
		title += ". " + note.Content.Text // the same words, which agent-shell shows once
		options = []acp.PermissionOption{options[0], options[2]}
	}
	res, rerr := g.asker.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionID: g.sessionID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: call.ID, Title: title, Kind: acp.ToolKind(info.Kind),
			Status: acp.ToolStatusPending, Content: preview, Locations: locations(info.Locations), RawInput: ap.input},
		Options: options,
	})
	outcome := session.PermissionCancelled
	if id, selected := res.Selected(); rerr == nil && selected {
		outcome = id
	}
	if ap.protected != "" && (outcome == session.AllowAlways || outcome == session.RejectAlways) {
		// Not offered: an editor that answers with it anyway gets it once.
		outcome = map[string]string{session.AllowAlways: session.AllowOnce, session.RejectAlways: session.RejectOnce}[outcome]
	}
	if rerr != nil && ctx.Err() == nil {
		// The editor could not ask: nothing is done without an answer.
		g.log.Warn().Err(rerr).Str("session", g.sessionID).Msg("permission request failed")
		return false, failed("Permission could not be asked (%v), so the tool was not run.", rerr), nil
	}
	if lerr := g.record(session.TypePermission, session.Permission{Turn: g.turn, ToolCallID: call.ID, Scope: scope, Outcome: outcome}); lerr != nil {
		return false, toolOutcome{}, fmt.Errorf("record permission: %w", lerr)
	}
	switch outcome {
	case session.AllowOnce, session.AllowAlways:
		if outcome == session.AllowAlways {
			g.rules()[scope] = outcome
		}
		return true, toolOutcome{}, nil
	case session.RejectOnce, session.RejectAlways:
		if outcome == session.RejectAlways {
			g.rules()[scope] = outcome
		}
		forUser := "Rejected"
		if outcome == session.RejectAlways {
			forUser = "Rejected, and will be for the rest of this session"
		}
		return false, declined(declinedText+" Do not retry it; continue without it or ask the user what to do.", forUser), nil
	}
	return false, toolOutcome{status: session.ToolAborted, output: "The user cancelled the turn before answering the permission request; the tool was not run.",
		content: []acp.ToolCallContent{acp.ContentText("Cancelled before permission was given")}}, errCancelledDuringTool
}

// commandScope is what "always allow this command" covers: the command line
// and the directory it runs in, since the same line runs another program
// elsewhere (./build.sh in vendor/evil).
func commandScope(command, dir string) string {
	return tools.RunCommand + ":" + strconv.Quote(dir) + " " + command
}

// commandPreview shows a command whole, as it will run.
func commandPreview(command, dir string) []acp.ToolCallContent {
	shown, hidden := tools.Visible(command)
	text := "Runs with `" + shell.Platform.Name + "` in " + tools.PathSpan(dir) + ":\n" + tools.CodeBlock(shell.Platform.Lang, shown)
	if hidden {
		text += "\n" + hiddenNote
	}
	return []acp.ToolCallContent{acp.ContentText(text)}
}

// mcpPreview shows an MCP call whole: the server, the tool and every
// argument as they are sent.
func mcpPreview(server, tool string, input json.RawMessage) []acp.ToolCallContent {
	var pretty bytes.Buffer
	if json.Indent(&pretty, input, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(input)
	}
	shown, hidden := tools.Visible(pretty.String())
	text := "Calls " + tools.PathSpan(tool) + " of the MCP server " + tools.PathSpan(server) + " with these arguments:\n" + tools.CodeBlock("json", shown)
	if hidden {
		text += "\n" + hiddenNote
	}
	return []acp.ToolCallContent{acp.ContentText(text)}
}

// mcpTitle names an MCP tool and its server ("github: create_issue"), as
// the server named them but with nothing hidden in the names.
func mcpTitle(server, tool string) string {
	s, _ := tools.VisibleLine(server)
	t, _ := tools.VisibleLine(tool)
	return s + ": " + t
}

// changeTitle is the title a permission request for a write or an edit
// shows: the file, where it really is when a link leads elsewhere, and a
// plain word that the change itself is in the diff, since a client that
// shows only the title does not show it.
func changeTitle(title, target string, linked bool) string {
	if linked {
		title += " (a link to " + tools.PathSpan(target) + ")"
	}
	return title + "; the change is in the diff attached to this request"
}

// protectedNote is the line a protected write's request adds to its diff.
func protectedNote(why string) acp.ToolCallContent {
	return acp.ContentText("Rebound always asks before this write, in every mode but full access: " + why + ".")
}

const hiddenNote = "Careful: this contains invisible or control characters, shown above as ⟨U+…⟩; they are part of what runs."

// shownInput is a tool call's rawInput for the editor: the arguments as
// decoded for the call, or nothing when they cannot be decoded (nothing
// runs then).
func shownInput(name, arguments string) json.RawMessage {
	if args, err := tools.Parse(name, arguments); err == nil {
		return tools.Canonical(args)
	}
	if strings.HasPrefix(name, "mcp__") {
		if in, err := canonicalObject(arguments); err == nil {
			return in
		}
	}
	return nil
}

// canonicalObject decodes an MCP call's arguments (a JSON object; empty is
// {}) and encodes them again, so that what is shown and what is sent are
// one value: a key given twice at the top is an error for the model, since
// a reader sees the first and a decoder may take the last; deeper repeats
// collapse to the value the encoding keeps, in the preview and the call
// alike.
func canonicalObject(arguments string) (json.RawMessage, error) {
	if strings.TrimSpace(arguments) == "" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("the arguments must be one JSON object, such as {\"name\": \"value\"}")
	}
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		key := tok.(string) // inside an object, a token here is a key
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("the argument %q is given twice; give each argument once", key)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
		}
		obj[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("the arguments must be one JSON object, with nothing after it")
	}
	return tools.Canonical(obj), nil
}
