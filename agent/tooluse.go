package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// Bounds on what one reply may ask for and what one result may carry. Each
// tool caps its own output well below maxToolOutputBytes (read_file at 256
// KiB, commands at tools.output_limit); this is the last line of defence.
const (
	maxToolCallsPerReply = 32
	maxToolOutputBytes   = 512 << 10
)

// Permission scopes: a standing answer for edits covers edit_file and
// write_file; one for a command covers that exact command line in that
// directory (commandScope).
const scopeEdits = "edits"

// toolCalls turns a finished reply's tool calls into the calls committed
// with it: every call gets an id of the session's (ID) that no other call
// of the session has (providers have sent none, and some send call_0 at
// every step, which an editor would merge into one call), that is in the
// provider's namespace, never Rebound's (providerCallID), and the number
// is bounded. A call whose provider id cannot be its ID keeps that id as
// ProviderID, which the model's history sends back. used is the session's
// ids so far; the new ones are added to it.
func toolCalls(calls []llm.ToolCall, used map[string]bool) []session.MessageToolCall {
	out := make([]session.MessageToolCall, 0, len(calls))
	for _, c := range calls {
		if len(out) == maxToolCallsPerReply {
			break
		}
		id, provider := c.ID, ""
		if !providerCallID(id) || used[id] {
			id, provider = newID("call_"), c.ID
			for used[id] { // 128 random bits: never, but cheap to be sure
				id = newID("call_")
			}
		}
		used[id] = true
		name := c.Name
		if name == "" {
			name = "unnamed_tool"
		}
		out = append(out, session.MessageToolCall{ID: id, Name: name, Arguments: c.Arguments, ProviderID: provider})
	}
	return out
}

// Ids that reach the editor come from two sources: Rebound mints some (its
// status tool calls), the provider names the model's tool calls. The
// namespaces are disjoint by construction: every toolCallId Rebound mints
// starts with reboundIDPrefix, and a provider's id is a call's id (and
// so the editor's) only when providerCallID accepts it, which it never
// does for one starting so. The same holds after a load: replay shows
// a call under its logged id (shownCallID).
const reboundIDPrefix = "rebound_"

// maxCallIDBytes bounds a provider's id used as the call's id: a longer
// one is kept only for the provider (ProviderID).
const maxCallIDBytes = 128

// providerCallID reports whether a provider's tool call id can be the
// call's id in the session and the editor: not empty, bounded, printable
// ASCII with no space (it is shown and logged), and outside Rebound's
// namespace (reservedCallID).
func providerCallID(id string) bool {
	if id == "" || len(id) > maxCallIDBytes || reservedCallID(id) {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// reservedCallID: ids of this form are never a call's: Rebound's own, and
// the escaped form shownCallID gives one an older log holds.
func reservedCallID(id string) bool {
	return strings.HasPrefix(id, reboundIDPrefix) || strings.HasPrefix(id, "~")
}

// shownCallID is the toolCallId the editor is shown for a logged call id:
// the id itself, which is every id toolCalls makes, so a replay shows a
// call under the id it had live. A log written before toolCalls kept
// provider ids out of Rebound's namespace may hold one in it; that id is
// escaped with a "~", which is injective and never gives Rebound's prefix.
func shownCallID(id string) string {
	if reservedCallID(id) {
		return "~" + id
	}
	return id
}

// toolOutcome is how one tool call ended.
type toolOutcome struct {
	status  string // session.ToolCompleted, ToolFailed or ToolAborted
	output  string // what the model reads
	content []acp.ToolCallContent
	// live is what the editor was shown while the call ran (a terminal the
	// log cannot replay); content then is what a replay shows instead.
	live []acp.ToolCallContent
}

func failed(format string, args ...any) toolOutcome {
	msg := fmt.Sprintf(format, args...)
	return toolOutcome{status: session.ToolFailed, output: msg, content: []acp.ToolCallContent{acp.ContentText(msg)}}
}

// declined is the result of a call the user said no to: the model is told
// what to do about it, the user sees what they chose.
func declined(forModel, forUser string) toolOutcome {
	return toolOutcome{status: session.ToolFailed, output: forModel, content: []acp.ToolCallContent{acp.ContentText(forUser)}}
}

// useTools runs the calls of a committed reply one by one, in order. Every
// call ends with a result in the log and in the model's next request; a
// cancelled turn gives the calls it did not reach a result saying so.
func (r *toolRunner) useTools(ctx context.Context, step int, calls []session.MessageToolCall) error {
	for i, call := range calls {
		if ctx.Err() != nil {
			return r.abortCalls(calls[i:], "This tool call was not run: the user cancelled the turn.")
		}
		if err := r.useTool(ctx, step, call); err != nil {
			return errors.Join(err, r.abortCalls(calls[i+1:], "This tool call was not run: the user cancelled the turn."))
		}
	}
	return nil
}

// abortCalls gives calls that never ran their result.
func (r *toolRunner) abortCalls(calls []session.MessageToolCall, why string) error {
	for _, c := range calls {
		if err := r.recordResult(c.ID, toolOutcome{status: session.ToolAborted, output: why}); err != nil {
			return err
		}
	}
	return nil
}

// useTool runs one call: announce it, ask permission where needed, run it,
// record and show the result. Only the log failing, or the user cancelling,
// is an error; everything a tool does wrong is a result for the model.
func (r *toolRunner) useTool(ctx context.Context, step int, call session.MessageToolCall) error {
	args, perr := tools.Parse(call.Name, call.Arguments)
	if a, ok := args.(*tools.UpdatePlanArgs); ok && perr == nil {
		return r.usePlan(ctx, step, call, a)
	}
	name, _ := tools.VisibleLine(call.Name) // the model's text, on one line
	info := tools.Info{Kind: string(acp.ToolKindOther), Title: name + " (invalid call)"}
	server, tool, isMCP := r.mcp.Lookup(call.Name)
	var input json.RawMessage // what runs, decoded: the editor's rawInput
	switch {
	case isMCP:
		info = tools.Info{Kind: string(acp.ToolKindOther), Title: mcpTitle(server, tool)}
		input, perr = canonicalObject(call.Arguments)
		if perr != nil {
			perr = fmt.Errorf("%s: %w", call.Name, perr)
		}
	case perr == nil:
		info = tools.Describe(r.ws, args)
		input = tools.Canonical(args)
	}
	if err := r.record(session.TypeToolCall, session.ToolCall{
		Turn: r.turn, Step: step, ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments,
		Title: info.Title, Kind: info.Kind, Locations: info.Locations,
	}); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	r.notify(ctx, acp.ToolCallUpdate{
		ToolCallID: call.ID, Title: info.Title, Name: call.Name,
		Kind: acp.ToolKind(info.Kind), Status: acp.ToolStatusPending, Locations: locations(info.Locations), RawInput: input,
	}.AsStart())
	var out toolOutcome
	var runErr error // the user cancelled during the call
	if perr != nil {
		out = failed("%v", perr)
	} else {
		if isMCP {
			out, runErr = r.callMCP(ctx, call, info, server, tool, input)
		} else {
			out, runErr = r.dispatch(ctx, call, info, args)
		}
		if runErr != nil && out.status == "" {
			return runErr // the log failed: nothing more can be recorded
		}
	}
	if err := r.recordResult(call.ID, out); err != nil {
		return errors.Join(runErr, err)
	}
	// A live terminal is already embedded (and now released): leave the
	// content as the editor has it.
	shown := nonNil(out.content)
	if out.live != nil {
		shown = nil
	}
	status := acp.ToolStatusCompleted
	if out.status != session.ToolCompleted {
		status = acp.ToolStatusFailed
	}
	r.notify(ctx, acp.ToolCallUpdate{ToolCallID: call.ID, Status: acp.ToolCallStatus(status), Content: shown}.AsUpdate())
	if runErr != nil {
		return runErr
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

func (r *toolRunner) recordResult(id string, out toolOutcome) error {
	res := session.ToolResult{Turn: r.turn, ToolCallID: id, Status: out.status, Output: capOutput(out.output)}
	if len(out.content) > 0 {
		res.Content = mustJSON(out.content)
	}
	if err := r.record(session.TypeToolResult, res); err != nil {
		return fmt.Errorf("record tool result: %w", err)
	}
	modelID := cmp.Or(r.pending[id], id)
	delete(r.pending, id)
	r.answered(llm.Message{Role: llm.RoleTool, ToolCallID: modelID, Content: res.Output})
	return nil
}

// usePlan runs a valid update_plan call: it records the call, the plan and
// the result, and sends the whole plan, which the editor shows in place of
// the last one. It never asks permission: it changes nothing but the panel.
func (r *toolRunner) usePlan(ctx context.Context, step int, call session.MessageToolCall, a *tools.UpdatePlanArgs) error {
	if err := r.record(session.TypeToolCall, session.ToolCall{
		Turn: r.turn, Step: step, ToolCallID: call.ID, Name: call.Name, Arguments: call.Arguments,
		Title: "Update plan", Kind: string(acp.ToolKindOther),
	}); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	entries := make([]session.PlanEntry, len(a.Entries))
	for i, e := range a.Entries {
		entries[i] = session.PlanEntry(e)
	}
	if err := r.record(session.TypePlan, session.Plan{Turn: r.turn, ToolCallID: call.ID, Entries: entries}); err != nil {
		return fmt.Errorf("record plan: %w", err)
	}
	r.notify(ctx, planUpdate(entries))
	if err := r.recordResult(call.ID, toolOutcome{status: session.ToolCompleted, output: planSummary(entries)}); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// callMCP runs a call to an MCP server's tool: permission as for a
// command, unless the mode says otherwise, then the call, bounded by the
// command timeout.
func (r *toolRunner) callMCP(ctx context.Context, call session.MessageToolCall, info tools.Info, server, tool string, input json.RawMessage) (toolOutcome, error) {
	if r.mode() == ModeReadOnly {
		return readOnlyOutput(call.Name), nil
	}
	ok, out, err := r.gate.permit(ctx, call, info, approval{scope: mcpScope(call.Name), preview: mcpPreview(server, tool, input), input: input,
		title: tools.MCPTitle(server, tool, input)})
	if !ok || err != nil {
		return out, err
	}
	r.inProgress(ctx, call.ID, nil)
	cctx, cancel := context.WithTimeout(ctx, r.cfg.CommandTimeout)
	defer cancel()
	res, err := r.mcp.Call(cctx, call.Name, string(input)) // what was shown, decoded
	switch {
	case err != nil && ctx.Err() != nil:
		return toolOutcome{status: session.ToolAborted, output: "The user cancelled the turn while the tool ran; its result is unknown.",
			content: []acp.ToolCallContent{acp.ContentText("Cancelled")}}, errCancelledDuringTool
	case err != nil && cctx.Err() != nil:
		return failed("%s did not answer within %v; it was given up.", info.Title, r.cfg.CommandTimeout), nil
	case err != nil:
		return failed("%v", err), nil
	}
	if res.IsError { // the model must tell a failed call from an answer
		return toolOutcome{status: session.ToolFailed, output: "The tool reported an error: " + res.Text,
			content: []acp.ToolCallContent{acp.ContentText(res.Text)}}, nil
	}
	return toolOutcome{status: session.ToolCompleted, output: res.Text, content: []acp.ToolCallContent{acp.ContentText(res.Text)}}, nil
}

// dispatch prepares the call (resolving paths, computing an edit), asks for
// permission when it changes something, and carries it out.
func (r *toolRunner) dispatch(ctx context.Context, call session.MessageToolCall, info tools.Info, args any) (toolOutcome, error) {
	switch a := args.(type) {
	case *tools.ReadFileArgs:
		return r.readFile(ctx, a), nil
	case *tools.FindFilesArgs:
		return r.find(ctx, a), nil
	case *tools.SearchFilesArgs:
		return r.search(ctx, a), nil
	}
	if r.mode() == ModeReadOnly {
		// Not offered, but the model may call it anyway.
		return readOnlyOutput(call.Name), nil
	}
	switch a := args.(type) {
	case *tools.WriteFileArgs:
		path, err := r.ws.Resolve(a.Path)
		if err != nil {
			return failed("%v", err), nil
		}
		old, err := r.readForChange(ctx, path, true)
		if err != nil {
			return failed("%v", err), nil
		}
		return r.change(ctx, call, info, tools.Canonical(a), path, old, a.Content)
	case *tools.EditFileArgs:
		path, err := r.ws.Resolve(a.Path)
		if err != nil {
			return failed("%v", err), nil
		}
		old, err := r.readForChange(ctx, path, false)
		if err != nil {
			return failed("%v", err), nil
		}
		updated, _, err := tools.ApplyEdit(*old, a.OldText, a.NewText, a.ReplaceAll)
		if err != nil {
			return failed("%v", err), nil
		}
		return r.change(ctx, call, info, tools.Canonical(a), path, old, updated)
	case *tools.RunCommandArgs:
		return r.runCommand(ctx, call, info, a)
	}
	return failed("%s is not a tool Rebound can run", call.Name), nil
}

func (r *toolRunner) readFile(ctx context.Context, a *tools.ReadFileArgs) toolOutcome {
	path, err := r.ws.Resolve(a.Path)
	if err != nil {
		return failed("%v", err)
	}
	text, err := r.readText(ctx, path)
	if err != nil {
		return failed("%v", err)
	}
	out := tools.FormatRead(text, a.Offset, a.Limit)
	return toolOutcome{status: session.ToolCompleted, output: out,
		content: []acp.ToolCallContent{acp.ContentText(fmt.Sprintf("Read %s (%d bytes)", r.rel(path), len(text)))}}
}

// readText reads through the editor when it offers to (it has the unsaved
// buffers), else from disk.
func (r *toolRunner) readText(ctx context.Context, path string) (string, error) {
	if !r.ed.Capabilities().FS.ReadTextFile {
		return tools.LocalFS{WS: r.ws}.ReadTextFile(ctx, path)
	}
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s does not exist", r.rel(path))
	case err == nil && fi.IsDir():
		return "", fmt.Errorf("%s is a directory, not a file; use find_files to list its files", r.rel(path))
	case err == nil && !fi.Mode().IsRegular():
		// A FIFO or a device would block the editor's read, or never end.
		return "", fmt.Errorf("%s is not a regular file; only text files can be read", r.rel(path))
	}
	res, err := r.ed.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: r.sessionID, Path: path})
	if err != nil {
		return "", fmt.Errorf("read %s: %w", r.rel(path), err)
	}
	return res.Content, nil
}

// readForChange reads the file a change replaces: nil for a file that does
// not exist yet, which only a write may create.
func (r *toolRunner) readForChange(ctx context.Context, path string, mayCreate bool) (*string, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if mayCreate {
			return nil, nil
		}
		return nil, fmt.Errorf("%s does not exist; use write_file to create a file", r.rel(path))
	}
	text, err := r.readText(ctx, path)
	if err != nil {
		return nil, err
	}
	return &text, nil
}

// change asks permission for a write or edit, showing the diff, and writes.
func (r *toolRunner) change(ctx context.Context, call session.MessageToolCall, info tools.Info, input json.RawMessage, path string, old *string, updated string) (toolOutcome, error) {
	diff := []acp.ToolCallContent{acp.ContentDiff(path, old, updated)}
	// Where the write lands, links followed, as the user is asked: the
	// target must be the same when it is written.
	target, err := r.ws.Target(path)
	if err != nil {
		return failed("%v", err), nil
	}
	ok, out, err := r.gate.permit(ctx, call, info, approval{scope: scopeEdits, preview: diff, input: input, protected: r.ws.ProtectedWrite(path, old, updated),
		title: changeTitle(info.Title, r.rel(target), r.ws.LinkTarget(path) != "")})
	if !ok || err != nil {
		return out, err
	}
	if now, err := r.ws.Target(path); err != nil || now != target {
		return failed("Nothing was written: %s changed while permission was asked (it led to %s, and now %s). Look at what changed before trying again.", r.rel(path), target, cmp.Or(now, fmt.Sprint(err))), nil
	}
	r.inProgress(ctx, call.ID, nil)
	if err := r.writeText(ctx, path, updated); err != nil {
		return failed("%v", err), nil
	}
	verb := "Edited"
	if old == nil {
		verb = "Created"
	}
	return toolOutcome{status: session.ToolCompleted, output: fmt.Sprintf("%s %s (%d bytes).", verb, r.rel(path), len(updated)), content: diff}, nil
}

func (r *toolRunner) writeText(ctx context.Context, path, content string) error {
	if !r.ed.Capabilities().FS.WriteTextFile {
		return tools.LocalFS{WS: r.ws}.WriteTextFile(ctx, path, content)
	}
	if err := r.ed.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionID: r.sessionID, Path: path, Content: content}); err != nil {
		return fmt.Errorf("write %s: %w", r.rel(path), err)
	}
	return nil
}

func (r *toolRunner) find(ctx context.Context, a *tools.FindFilesArgs) toolOutcome {
	root, err := r.ws.Resolve(cmp.Or(a.Path, "."))
	if err != nil {
		return failed("%v", err)
	}
	paths, truncated, err := tools.Find(ctx, root, a.Glob, 0)
	if err != nil {
		return failed("%v", err)
	}
	out := tools.FormatFind(r.ws, paths, truncated)
	return toolOutcome{status: session.ToolCompleted, output: out,
		content: []acp.ToolCallContent{acp.ContentText(fmt.Sprintf("%d %s", len(paths), plural(len(paths), "file")))}}
}

func (r *toolRunner) search(ctx context.Context, a *tools.SearchFilesArgs) toolOutcome {
	root, err := r.ws.Resolve(cmp.Or(a.Path, "."))
	if err != nil {
		return failed("%v", err)
	}
	re, err := regexp.Compile(a.Pattern)
	if err != nil {
		return failed("%v", err)
	}
	matches, truncated, err := tools.Search(ctx, root, re, a.Glob, 0)
	if err != nil {
		return failed("%v", err)
	}
	out := tools.FormatSearch(r.ws, matches, truncated)
	return toolOutcome{status: session.ToolCompleted, output: out,
		content: []acp.ToolCallContent{acp.ContentText(fmt.Sprintf("%d %s", len(matches), plural(len(matches), "match")))}}
}

var errCancelledDuringTool = errors.New("the user cancelled the turn during a tool call")

func (r *toolRunner) inProgress(ctx context.Context, id string, content []acp.ToolCallContent) {
	r.notify(ctx, acp.ToolCallUpdate{ToolCallID: id, Status: acp.ToolStatusInProgress, Content: content}.AsUpdate())
}

// runCommand asks permission, then runs the command in the editor's terminal
// when it offers one (the user watches it live), else locally.
func (r *toolRunner) runCommand(ctx context.Context, call session.MessageToolCall, info tools.Info, a *tools.RunCommandArgs) (toolOutcome, error) {
	// It runs where the links lead now, and what is asked names that.
	dir, err := r.ws.Target(cmp.Or(a.Cwd, "."))
	if err != nil {
		return failed("%v", err), nil
	}
	timeout := r.cfg.CommandTimeout
	if a.TimeoutSeconds > 0 {
		timeout = min(time.Duration(a.TimeoutSeconds)*time.Second, r.cfg.MaxCommandTimeout)
	}
	runs := tools.RunCommandArgs{Command: a.Command, Cwd: dir, TimeoutSeconds: int((timeout + time.Second - 1) / time.Second)}
	ok, out, err := r.gate.permit(ctx, call, info, approval{scope: commandScope(a.Command, dir), preview: commandPreview(a.Command, dir), input: tools.Canonical(runs),
		title: tools.CommandTitle(a.Command, dir)})
	if !ok || err != nil {
		return out, err
	}
	// The directory may have been swapped for a link while the user
	// decided: it runs only where it was approved to.
	if now, err := r.ws.Target(dir); err != nil || now != dir {
		return failed("The command was not run: its directory %s changed while permission was asked. Look at what changed before trying again.", dir), nil
	}
	if r.ed.Capabilities().Terminal {
		return r.runInTerminal(ctx, call, a.Command, dir, timeout)
	}
	r.inProgress(ctx, call.ID, nil)
	return r.runLocally(ctx, a.Command, dir, timeout)
}

func (r *toolRunner) rel(path string) string {
	if rel, err := filepath.Rel(r.ws.Cwd(), path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func locations(paths []string) []acp.ToolCallLocation {
	if len(paths) == 0 {
		return nil
	}
	out := make([]acp.ToolCallLocation, len(paths))
	for i, p := range paths {
		out[i] = acp.ToolCallLocation{Path: p}
	}
	return out
}

func nonNil(c []acp.ToolCallContent) []acp.ToolCallContent {
	if c == nil {
		return []acp.ToolCallContent{}
	}
	return c
}

// capOutput bounds what one result adds to every later request, keeping its
// beginning and its end (where a command's exit status is).
func capOutput(s string) string {
	if len(s) <= maxToolOutputBytes {
		return s
	}
	head, tail := maxToolOutputBytes/2, len(s)-maxToolOutputBytes/2
	for head > 0 && !isRuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !isRuneStart(s[tail]) {
		tail++
	}
	return s[:head] + fmt.Sprintf("\n[... %d bytes of output omitted ...]\n", tail-head) + s[tail:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	if strings.HasSuffix(word, "ch") {
		return word + "es"
	}
	if strings.HasSuffix(word, "ry") {
		return strings.TrimSuffix(word, "y") + "ies"
	}
	return word + "s"
}
