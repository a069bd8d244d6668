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
	words := answerWordsFor(ap.scope)
	if decided, ok, out := g.decideWithoutAsking(call.Name, ap, words); decided {
		return ok, out, nil
	}
	outcome, rerr := g.ask(ctx, g.request(call, info, ap, words), ap.protected != "")
	if rerr != nil && ctx.Err() == nil {
		// The editor could not ask: nothing is done without an answer.
		g.log.Warn().Err(rerr).Str("session", g.sessionID).Msg("permission request failed")
		return false, failed("Permission could not be asked (%v), so the tool was not run.", rerr), nil
	}
	if lerr := g.record(session.TypePermission, session.Permission{Turn: g.turn, ToolCallID: call.ID, Scope: ap.scope, Outcome: outcome}); lerr != nil {
		return false, toolOutcome{}, fmt.Errorf("record permission: %w", lerr)
	}
	return g.settle(ap.scope, outcome, words)
}

// answerWords is how a request and its refusals name what a standing
// answer covers: edits, one MCP tool, or a command in a directory.
type answerWords struct {
	always, never string // the standing options
	// declined and declinedAlways tell the model about a refusal, once
	// and standing.
	declined, declinedAlways string
}

func answerWordsFor(scope string) answerWords {
	switch {
	case strings.HasPrefix(scope, "mcp:"):
		return answerWords{"Always allow this tool", "Always reject this tool",
			"The user declined this tool call.", "The user has declined this tool for this session."}
	case scope != scopeEdits:
		return answerWords{"Always allow this command in this directory", "Always reject this command in this directory",
			"The user declined to run this command.", "The user has declined this command for this session."}
	}
	return answerWords{"Always allow edits in this session", "Always reject edits in this session",
		"The user declined this change.", "The user has declined all edits for this session."}
}

// decideWithoutAsking is what the session's mode and a standing answer
// decide; decided is false when the user must be asked. A standing
// rejection holds in every mode; a protected write is allowed without
// asking only in full_access.
func (g *permissionGate) decideWithoutAsking(tool string, ap approval, words answerWords) (decided, ok bool, out toolOutcome) {
	mode := g.mode()
	d := modeDecision(mode, ap.scope)
	if d == refuse {
		return true, false, readOnlyOutput(tool)
	}
	unasked := ap.protected == "" || mode == ModeFullAccess
	switch g.rules()[ap.scope] {
	case session.AllowAlways:
		if unasked {
			return true, true, toolOutcome{}
		}
	case session.RejectAlways:
		return true, false, declined(words.declinedAlways+" Do not try again; continue without it or ask the user how to proceed.", "Rejected: you chose to always reject this in this session")
	}
	if d == allow && unasked {
		return true, true, toolOutcome{}
	}
	return false, false, toolOutcome{}
}

// request is the permission request for a call: the whole of what runs in
// its content, the decoded input as rawInput, and the options. A protected
// write says why it asks, after the preview and in the title, and offers
// no standing answer.
func (g *permissionGate) request(call session.MessageToolCall, info tools.Info, ap approval, words answerWords) acp.RequestPermissionRequest {
	preview := ap.preview
	options := []acp.PermissionOption{
		{OptionID: session.AllowOnce, Name: "Allow", Kind: acp.PermissionAllowOnce},
		{OptionID: session.AllowAlways, Name: words.always, Kind: acp.PermissionAllowAlways},
		{OptionID: session.RejectOnce, Name: "Reject", Kind: acp.PermissionRejectOnce},
		{OptionID: session.RejectAlways, Name: words.never, Kind: acp.PermissionRejectAlways},
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
	return acp.RequestPermissionRequest{
		SessionID: g.sessionID,
		ToolCall: acp.ToolCallUpdate{ToolCallID: call.ID, Title: title, Kind: acp.ToolKind(info.Kind),
			Status: acp.ToolStatusPending, Content: preview, Locations: locations(info.Locations), RawInput: ap.input},
		Options: options,
	}
}

// ask sends req and returns the option the user selected, or
// session.PermissionCancelled when none was. Where no standing answer was
// offered (protected), an editor that answers with one anyway gets it once.
func (g *permissionGate) ask(ctx context.Context, req acp.RequestPermissionRequest, protected bool) (string, error) {
	res, err := g.asker.RequestPermission(ctx, req)
	id, selected := res.Selected()
	if err != nil || !selected {
		return session.PermissionCancelled, err
	}
	if protected {
		id = onceOnly(id)
	}
	return id, nil
}

// onceOnly is an answer without its standing part.
func onceOnly(id string) string {
	switch id {
	case session.AllowAlways:
		return session.AllowOnce
	case session.RejectAlways:
		return session.RejectOnce
	}
	return id
}

// settle carries out an answer already recorded: an "always" answer
// stands for the rest of the session; no answer means the user cancelled
// the turn while asked.
func (g *permissionGate) settle(scope, outcome string, words answerWords) (bool, toolOutcome, error) {
	if outcome == session.AllowAlways || outcome == session.RejectAlways {
		g.rules()[scope] = outcome
	}
	const retry = " Do not retry it; continue without it or ask the user what to do."
	switch outcome {
	case session.AllowOnce, session.AllowAlways:
		return true, toolOutcome{}, nil
	case session.RejectOnce:
		return false, declined(words.declined+retry, "Rejected"), nil
	case session.RejectAlways:
		return false, declined(words.declined+retry, "Rejected, and will be for the rest of this session"), nil
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
