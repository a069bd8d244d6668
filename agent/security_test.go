package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// These pin the second security review: what a person approves is what
// runs, and nothing reaches outside the workspace.

// toolCall is a reply that asks for one call.
func toolCall(id, name, args string) func(context.Context, llm.Request) (llm.Stream, error) {
	return reply(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: id, Name: name, Arguments: args}}},
		llm.Chunk{FinishReason: llm.FinishToolCalls})
}

// #15: a provider that numbers its calls from call_0 at every step still
// gives the editor one toolCallId per call, live and in the load replay.
func TestAgent_ToolCallIDsAreUniqueInTheSession(t *testing.T) {
	p := &script{}
	for range 3 {
		p.answers = append(p.answers, toolCall("call_0", "read_file", `{"path":"missing.txt"}`))
	}
	p.answers = append(p.answers, text("done"), toolCall("call_0", "read_file", `{"path":"other.txt"}`), text("again"))
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	live := &editor{}
	for _, prompt := range []string{"one", "two"} {
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, live); err != nil {
			t.Fatal(err)
		}
	}
	unique := func(what string, updates []acp.SessionUpdate) {
		t.Helper()
		seen := map[string]bool{}
		n := 0
		for _, u := range updates {
			if u.SessionUpdate != acp.UpdateToolCall {
				continue
			}
			n++
			if seen[u.ToolCallID] {
				t.Errorf("%s: toolCallId %q is used by two tool calls", what, u.ToolCallID)
			}
			seen[u.ToolCallID] = true
		}
		if n != 4 {
			t.Errorf("%s: %d tool calls, want 4", what, n)
		}
	}
	unique("live", live.updates)
	a.Close()

	b := testAgent(t, Config{Provider: p, StateDir: a.cfg.StateDir})
	replayed := &editor{}
	if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, replayed); err != nil {
		t.Fatal(err)
	}
	unique("replay", replayed.updates)
	// The model's history sends the provider back the ids it wrote
	// (call_0 each time), each call followed by its own result.
	last := p.reqs[len(p.reqs)-1]
	var calls, results []string
	for _, m := range last.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID)
		}
		if m.Role == llm.RoleTool {
			results = append(results, m.ToolCallID)
		}
	}
	if want := "call_0 call_0 call_0 call_0"; strings.Join(calls, " ") != want || strings.Join(results, " ") != want {
		t.Errorf("the last request has calls %q and results %q, want the provider's %q each", calls, results, want)
	}
}

// approver is an editor that answers every permission request with answer
// and keeps the requests.
type approver struct {
	editor
	answer string
	asked  []acp.RequestPermissionRequest
}

func (c *approver) RequestPermission(_ context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, req)
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionSelected, OptionID: c.answer}}, nil
}

// shownText is all the text content of a permission request.
func shownText(req acp.RequestPermissionRequest) string {
	var b strings.Builder
	for _, c := range req.ToolCall.Content {
		if c.Content != nil {
			b.WriteString(c.Content.Text)
		}
	}
	return b.String()
}

// #1: a command is asked about whole, with its directory, however it is
// padded or split over lines, and rawInput is what runs.
func TestAgent_PermissionShowsTheWholeCommand(t *testing.T) {
	for _, command := range []string{
		"echo hello\ntouch pwned",
		"echo hello" + strings.Repeat(" ", 200) + "; touch pwned",
		"echo hello\u202e; touch pwned",
	} {
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
			toolCall("c1", "run_command", string(mustJSON(map[string]string{"command": command}))), text("done"),
		}}
		a := testAgent(t, Config{Provider: p})
		id := newSession(t, a)
		ed := &approver{answer: session.RejectOnce}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, ed); err != nil {
			t.Fatal(err)
		}
		if len(ed.asked) != 1 {
			t.Fatalf("%d permission requests, want 1", len(ed.asked))
		}
		req := ed.asked[0]
		shown, hidden := tools.Visible(command)
		if got := shownText(req); !strings.Contains(got, shown) || !strings.Contains(got, a.store.sessions[id].dirs.cwd) {
			t.Errorf("the request shows %q; want the whole command %q and its directory", got, shown)
		}
		if hidden && !strings.Contains(shownText(req), "invisible") {
			t.Errorf("the request does not warn of the invisible character: %q", shownText(req))
		}
		var in tools.RunCommandArgs
		if err := json.Unmarshal(req.ToolCall.RawInput, &in); err != nil || in.Command != command || in.Cwd != evalSymlinks(t, a.store.sessions[id].dirs.cwd) {
			t.Errorf("rawInput %s (%v), want the command and directory that run", req.ToolCall.RawInput, err)
		}
	}
}

// #1: an MCP call is asked about with its arguments, as they are sent; a
// key given twice is the model's error and nothing is asked or run.
func TestAgent_MCPArgumentsAreShownAndSentAsOne(t *testing.T) {
	in, err := canonicalObject(`{"path":"/tmp/a","recursive":true,"n":1.50}`)
	if err != nil || string(in) != `{"n":1.50,"path":"/tmp/a","recursive":true}` {
		t.Errorf("canonicalObject = %s, %v", in, err)
	}
	if _, err := canonicalObject(`{"path":"a","path":"/etc"}`); err == nil || !strings.Contains(err.Error(), `"path" is given twice`) {
		t.Errorf("a repeated key: %v, want an error naming it", err)
	}
	for _, bad := range []string{`[1]`, `{"a":1} {"b":2}`, `{"a":`, `"x"`} {
		if _, err := canonicalObject(bad); err == nil {
			t.Errorf("canonicalObject(%s) accepted", bad)
		}
	}
	got := shownText(acp.RequestPermissionRequest{ToolCall: acp.ToolCallUpdate{Content: mcpPreview("files", "delete", json.RawMessage(`{"path":"/tmp/a","recursive":true}`))}})
	for _, want := range []string{"`delete`", "`files`", `"path": "/tmp/a"`, `"recursive": true`} {
		if !strings.Contains(got, want) {
			t.Errorf("the MCP preview %q lacks %s", got, want)
		}
	}
}

// #3: "always allow ./build.sh" covers it where it was allowed, not the
// same line in another directory.
func TestAgent_AlwaysAllowNamesTheDirectory(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		toolCall("c1", "run_command", `{"command":"true"}`), text("one"),
		toolCall("c2", "run_command", `{"command":"true"}`), text("two"),
		toolCall("c3", "run_command", `{"command":"true","cwd":"vendor/evil"}`), text("three"),
	}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	if err := os.MkdirAll(filepath.Join(a.store.sessions[id].dirs.cwd, "vendor", "evil"), 0o755); err != nil {
		t.Fatal(err)
	}
	ed := &approver{answer: session.AllowAlways}
	for _, prompt := range []string{"one", "two", "three"} {
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, ed); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"one": 1, "two": 1, "three": 2}[prompt]
		if len(ed.asked) != want {
			t.Fatalf("after %q: %d permission requests, want %d", prompt, len(ed.asked), want)
		}
	}
	if got := shownText(ed.asked[1]); !strings.Contains(got, filepath.Join("vendor", "evil")) {
		t.Errorf("the second request does not name vendor/evil: %q", got)
	}
}

// silentTerminal is an editor with a terminal that never answers the
// requests that clean up after a command.
type silentTerminal struct {
	approver
	waiting chan struct{} // closed once the command runs
}

func (c *silentTerminal) Capabilities() acp.ClientCapabilities {
	return acp.ClientCapabilities{Terminal: true}
}

func (c *silentTerminal) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{TerminalID: "term_1"}, nil
}

func (c *silentTerminal) WaitForTerminalExit(ctx context.Context, _ acp.TerminalRequest) (acp.TerminalExitStatus, error) {
	close(c.waiting)
	<-ctx.Done()
	return acp.TerminalExitStatus{}, ctx.Err()
}

func (c *silentTerminal) KillTerminal(ctx context.Context, _ acp.TerminalRequest) error {
	<-ctx.Done()
	return ctx.Err()
}

func (c *silentTerminal) TerminalOutput(ctx context.Context, _ acp.TerminalRequest) (acp.TerminalOutputResponse, error) {
	<-ctx.Done()
	return acp.TerminalOutputResponse{}, ctx.Err()
}

func (c *silentTerminal) ReleaseTerminal(ctx context.Context, _ acp.TerminalRequest) error {
	<-ctx.Done()
	return ctx.Err()
}

// #11: a cancelled prompt is answered even when the editor never answers
// terminal/kill, terminal/output or terminal/release.
func TestAgent_CancelIsAnsweredWhenTheTerminalIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
			toolCall("c1", "run_command", `{"command":"sleep 600"}`), text("done"),
		}}
		a := testAgent(t, Config{Provider: p})
		id := newSession(t, a)
		ed := &silentTerminal{approver: approver{answer: session.AllowOnce}, waiting: make(chan struct{})}
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			<-ed.waiting
			cancel()
		}()
		start := time.Now()
		res, err := a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, ed)
		if err != nil || res.StopReason != acp.StopCancelled {
			t.Fatalf("Prompt = %+v, %v; want cancelled", res, err)
		}
		if took := time.Since(start); took != 3*terminalCleanupTimeout {
			t.Errorf("answered after %s, want %s (kill, output and release, each bounded)", took, 3*terminalCleanupTimeout)
		}
	})
}

// swapper is an editor that, while it asks, replaces a directory with a
// link to another one.
type swapper struct {
	approver
	dir, to string
}

func (c *swapper) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	if err := os.Rename(c.dir, c.dir+".old"); err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	if err := os.Symlink(c.to, c.dir); err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	return c.approver.RequestPermission(ctx, req)
}

// #7: a command runs only in the directory that was approved, even when it
// is swapped for a link while the user decides.
func TestAgent_CommandDirectorySwappedDuringPermission(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		toolCall("c1", "run_command", `{"command":"touch ran-here","cwd":"sub"}`), text("done"),
	}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	sub := filepath.Join(a.store.sessions[id].dirs.cwd, "sub")
	outside := t.TempDir()
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	ed := &swapper{approver: approver{answer: session.AllowOnce}, dir: sub, to: outside}
	promptGo(t, a, id, ed)
	if _, err := os.Stat(filepath.Join(outside, "ran-here")); err == nil {
		t.Fatal("the command ran in the directory swapped in after it was approved")
	}
	last := p.reqs[len(p.reqs)-1].Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, "changed while permission was asked") {
		t.Errorf("the model reads %q, want that the directory changed", got)
	}
}

// #2: a call that spells a key twice (in another case) shows one command
// and would run another; it is refused before anyone is asked, and the
// model is told which key.
func TestAgent_AmbiguousArgumentsAreRefused(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		toolCall("c1", "run_command", `{"command":"echo hello","COMMAND":"touch x"}`), text("done"),
	}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	ed := &approver{answer: session.AllowOnce}
	promptGo(t, a, id, ed)
	if len(ed.asked) != 0 {
		t.Errorf("asked %d times about an ambiguous call", len(ed.asked))
	}
	if _, err := os.Stat(filepath.Join(a.store.sessions[id].dirs.cwd, "x")); err == nil {
		t.Error("the command hidden in COMMAND ran")
	}
	last := p.reqs[len(p.reqs)-1].Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, `"COMMAND"`) {
		t.Errorf("the model reads %q, want the key named", got)
	}
	for _, u := range ed.updates {
		if u.SessionUpdate == acp.UpdateToolCall && len(u.RawInput) != 0 {
			t.Errorf("the editor was shown rawInput %s for a call that cannot run", u.RawInput)
		}
	}
}

// #4: a write into .git asks, with the reason, in accept_edits and after
// "always allow edits", and offers no standing answer.
func TestAgent_ProtectedWritesAlwaysAsk(t *testing.T) {
	for _, mode := range []string{ModeAcceptEdits, ModeAsk} {
		t.Run(mode, func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
				toolCall("c1", "write_file", `{"path":"notes.txt","content":"fine"}`), text("one"),
				toolCall("c2", "write_file", `{"path":".git/config","content":"[core]\n\tfsmonitor = touch pwned\n"}`), text("two"),
			}}
			a := testAgent(t, Config{Provider: p})
			id := newSession(t, a)
			cwd := a.store.sessions[id].dirs.cwd
			if err := os.MkdirAll(filepath.Join(cwd, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := a.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: mode}, &editor{}); err != nil {
				t.Fatal(err)
			}
			ed := &approver{answer: session.AllowAlways}
			for _, prompt := range []string{"one", "two"} {
				if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, ed); err != nil {
					t.Fatal(err)
				}
			}
			wantAsked := map[string]int{ModeAcceptEdits: 1, ModeAsk: 2}[mode]
			if len(ed.asked) != wantAsked {
				t.Fatalf("%d permission requests, want %d", len(ed.asked), wantAsked)
			}
			req := ed.asked[len(ed.asked)-1]
			if got := shownText(req); !strings.Contains(got, ".git") || !strings.Contains(got, "every mode but full access") {
				t.Errorf("the request for .git/config says %q, want why it asks", got)
			}
			for _, o := range req.Options {
				if o.Kind == acp.PermissionAllowAlways || o.Kind == acp.PermissionRejectAlways {
					t.Errorf("a standing answer %q is offered for .git/config", o.OptionID)
				}
			}
		})
	}
}

// Issue 29 #3: in accept_edits, a write to what a git hook runner, direnv,
// an editor or a package manager reads to decide what to run on the
// person's next commit, cd or open asks, each time; ordinary files and a
// package.json change outside its hook keys do not.
func TestAgent_HookRunnerConfigAsks(t *testing.T) {
	writes := []struct {
		path, content string
		asks          bool
	}{
		{"lefthook.yml", "pre-commit:\n  commands:\n    x:\n      run: touch pwned\n", true},
		{"lefthook-local.yml", "pre-commit: {}\n", true},
		{".lefthook.toml", "[pre-commit]\n", true},
		{"web/.lintstagedrc.json", `{"*": "touch pwned"}`, true},
		{"lint-staged.config.mjs", "export default {'*': 'touch pwned'}\n", true},
		{".overcommit.yml", "PreCommit: {}\n", true},
		{".huskyrc", `{"hooks": {"pre-commit": "touch pwned"}}`, true},
		{".simple-git-hooks.json", `{"pre-commit": "touch pwned"}`, true},
		{".pre-commit-config.yml", "repos: []\n", true},
		{"mise.local.toml", "[hooks]\nenter = \"touch pwned\"\n", true},
		{".tool-versions", "node path:./bin\n", true},
		{".yarnrc.yml", "yarnPath: ./evil.cjs\n", true},
		{".npmrc", "script-shell=./evil.sh\n", true},
		{".cargo/config.toml", "[build]\nrustc-wrapper = \"./evil\"\n", true},
		{"src/main.go", "package main\n", false},
		{"Makefile", "all:\n\ttrue\n", false},
	}
	var answers []func(context.Context, llm.Request) (llm.Stream, error)
	var want []string
	for i, w := range writes {
		args, err := json.Marshal(map[string]string{"path": w.path, "content": w.content})
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, toolCall(fmt.Sprint("w", i), "write_file", string(args)))
		if w.asks {
			want = append(want, w.path)
		}
	}
	// package.json: a script edit goes through, a lint-staged edit asks.
	answers = append(answers,
		toolCall("e1", "edit_file", `{"path":"package.json","old_text":"\"tsc\"","new_text":"\"tsc -b\""}`),
		toolCall("e2", "edit_file", `{"path":"package.json","old_text":"\"eslint\"","new_text":"\"touch pwned\""}`),
		text("done"))
	want = append(want, "package.json")

	a := testAgent(t, Config{Provider: &script{answers: answers}})
	id := newSession(t, a)
	cwd := a.store.sessions[id].dirs.cwd
	if err := os.WriteFile(filepath.Join(cwd, "package.json"), []byte(`{"scripts": {"build": "tsc"}, "lint-staged": {"*.js": "eslint"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: ModeAcceptEdits}, &editor{}); err != nil {
		t.Fatal(err)
	}
	ed := &approver{answer: session.AllowOnce}
	promptGo(t, a, id, ed)
	var asked []string
	for _, req := range ed.asked {
		for _, c := range req.ToolCall.Content {
			if c.Type == acp.ToolContentDiff {
				rel, _ := filepath.Rel(cwd, c.Path)
				asked = append(asked, filepath.ToSlash(rel))
			}
		}
		if !strings.Contains(shownText(req), "every mode but full access") {
			t.Errorf("the request says %q, want why it asks", shownText(req))
		}
		for _, o := range req.Options {
			if o.Kind == acp.PermissionAllowAlways || o.Kind == acp.PermissionRejectAlways {
				t.Errorf("a standing answer %q is offered for a protected write", o.OptionID)
			}
		}
	}
	if !slices.Equal(asked, want) {
		t.Errorf("accept_edits asked for %q, want %q", asked, want)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "package.json")); err != nil || !strings.Contains(string(b), "tsc -b") {
		t.Errorf("package.json is %q (%v), want the script edit made without asking", b, err)
	}
}

// #5: the project's AGENTS.md is read like a tool reads: a link out of the
// workspace, or a FIFO, is not sent to the provider (or waited on).
func TestAgent_AgentsFileIsConfined(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(secret, []byte("aws_secret_access_key = hunter2hunter2"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		make func(t *testing.T, path string) error
	}{
		{"link out", func(_ *testing.T, path string) error { return os.Symlink(secret, path) }},
		{"fifo", func(t *testing.T, path string) error { testkit.Mkfifo(t, path); return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
			a := testAgent(t, Config{Provider: p})
			id := newSession(t, a)
			if err := tt.make(t, filepath.Join(a.store.sessions[id].dirs.cwd, "AGENTS.md")); err != nil {
				t.Fatal(err)
			}
			if _, err := ask(t.Context(), a, id, "hi"); err != nil {
				t.Fatal(err)
			}
			if system := p.reqs[0].Messages[0].Content; strings.Contains(system, "hunter2") || strings.Contains(system, "agents_md") {
				t.Errorf("the system prompt holds the file: %q", system)
			}
		})
	}
}

// fsSwapper is an editor with its own file system that, while it asks,
// swaps the file being written for a link out of the workspace.
type fsSwapper struct {
	approver
	path, to string
	written  []string
	readHook func()
}

func (c *fsSwapper) Capabilities() acp.ClientCapabilities {
	return acp.ClientCapabilities{FS: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}}
}

func (c *fsSwapper) ReadTextFile(_ context.Context, req acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	if c.readHook != nil {
		c.readHook()
		return acp.ReadTextFileResponse{}, nil
	}
	b, err := os.ReadFile(req.Path)
	return acp.ReadTextFileResponse{Content: string(b)}, err
}

func (c *fsSwapper) WriteTextFile(_ context.Context, req acp.WriteTextFileRequest) error {
	c.written = append(c.written, req.Path)
	return nil
}

func (c *fsSwapper) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	if err := os.Remove(c.path); err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	if err := os.Symlink(c.to, c.path); err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	return c.approver.RequestPermission(ctx, req)
}

// #7: the editor is never asked to write a file that was swapped for a
// link while the user decided.
func TestAgent_WriteTargetSwappedDuringPermission(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		toolCall("c1", "write_file", `{"path":"notes.txt","content":"new"}`), text("done"),
	}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	path := filepath.Join(a.store.sessions[id].dirs.cwd, "notes.txt")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	ed := &fsSwapper{approver: approver{answer: session.AllowOnce}, path: path, to: filepath.Join(t.TempDir(), ".bash_login")}
	promptGo(t, a, id, ed)
	if len(ed.written) != 0 {
		t.Errorf("the editor was asked to write %v after the target became a link out", ed.written)
	}
	last := p.reqs[len(p.reqs)-1].Messages
	if got := last[len(last)-1].Content; !strings.Contains(got, "changed while permission was asked") && !strings.Contains(got, "outside the workspace") {
		t.Errorf("the model reads %q", got)
	}
}

// #10: a FIFO in the workspace is refused before the editor is asked to
// read it (its read would block, beyond cancel).
func TestAgent_EditorIsNotAskedToReadAFIFO(t *testing.T) {
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		toolCall("c1", "read_file", `{"path":"pipe"}`), text("done"),
	}}
	a := testAgent(t, Config{Provider: p})
	id := newSession(t, a)
	testkit.Mkfifo(t, filepath.Join(a.store.sessions[id].dirs.cwd, "pipe"))
	ed := &fsSwapper{}
	reads := 0
	ed.readHook = func() { reads++ }
	promptGo(t, a, id, ed)
	last := p.reqs[len(p.reqs)-1].Messages
	if got := last[len(last)-1].Content; reads != 0 || !strings.Contains(got, "not a regular file") {
		t.Errorf("%d reads asked of the editor; the model reads %q", reads, got)
	}
}

func evalSymlinks(t *testing.T, path string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	return real
}
