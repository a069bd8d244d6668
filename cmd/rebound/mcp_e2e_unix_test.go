//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// mcpServerJSON is an mcpServers entry that runs this test binary as the
// mock MCP server, writing its pid to pidFile, with more env.
func mcpServerJSON(tb testing.TB, name, pidFile string, env ...string) string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	vars := []map[string]string{{"name": mcpmock.EnvServe, "value": "1"}, {"name": mcpmock.EnvPIDFile, "value": pidFile}}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars = append(vars, map[string]string{"name": k, "value": v})
	}
	b, _ := json.Marshal(map[string]any{"name": name, "command": exe, "args": []string{}, "env": vars})
	return string(b)
}

// waitPID reads the pid a mock server wrote.
func waitPID(tb testing.TB, path string) int {
	tb.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	tb.Fatalf("no pid in %s", path)
	return 0
}

// gone waits (bounded) until pid no longer exists.
func gone(pid int) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
	}
	return false
}

// TestE2E_MCPServers: the built binary runs a stdio MCP server the editor
// names, offers its tools under prefixed names, calls them (full_access: no
// permission asked) and feeds the results to the model; a server that exits
// at once is reported with a notice and the session goes on; session/close
// stops the server's process, and so does the end of stdin.
func TestE2E_MCPServers(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{ToolCalls: []mockprovider.ToolCall{{ID: "c1", Name: "mcp__mock__echo", Arguments: `{"text":"hello from MCP"}`}}},
		{Text: "The server said hello."},
		{Text: "Second session."},
	}})
	p, dir := spawnFullAccess(t, mock)

	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"notices":{}}}}}`)
	if _, resp := p.until(t, 0); !strings.Contains(mustMarshal(resp), `"mcpCapabilities":{"http":true,"sse":true}`) {
		t.Errorf("initialize does not advertise http and sse MCP servers: %s", mustMarshal(resp))
	}
	pid1, pidDead := filepath.Join(dir, "mock.pid"), filepath.Join(dir, "dead.pid")
	servers := "[" + mcpServerJSON(t, "mock", pid1) + "," + mcpServerJSON(t, "dead", pidDead, mcpmock.EnvExitAtOnce+"=1") + "]"
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":`+servers+`}}`)
	_, resp := p.until(t, 1)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", resp)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"call it"}]}}`)
	notes, resp := p.until(t, 2)
	if got := resp["result"].(map[string]any)["stopReason"]; got != "end_turn" {
		t.Fatalf("stopReason = %v (%v)\nstderr:\n%s", got, resp, p.stderr)
	}
	transcript := mustMarshal(notes)
	for _, want := range []string{`"sessionUpdate":"notice"`, `MCP server \"dead\" is not available`, `"title":"mock: echo"`, `"status":"completed"`} {
		if !strings.Contains(transcript, want) {
			t.Errorf("updates lack %s:\n%s", want, transcript)
		}
	}
	reqs := mock.Requests()
	if len(reqs) != 2 || !slices.Contains(reqs[0].Tools, "mcp__mock__echo") || slices.ContainsFunc(reqs[0].Tools, func(n string) bool { return strings.HasPrefix(n, "mcp__dead") }) {
		t.Fatalf("provider requests: %d, first offered %v", len(reqs), reqs[0].Tools)
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Role != "tool" || last.Content != "hello from MCP" {
		t.Errorf("the model got %+v, want the echo tool's result", last)
	}
	if sys := reqs[0].Messages[0].Content; !strings.Contains(sys, "not available") || !strings.Contains(sys, "dead") {
		t.Errorf("the system prompt does not say the dead server is missing:\n%s", sys)
	}

	pid := waitPID(t, pid1)
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"session/close","params":{"sessionId":"`+sid+`"}}`)
	p.until(t, 3)
	if !gone(pid) {
		t.Errorf("the MCP server (pid %d) still runs after session/close", pid)
	}

	// A second session's server dies with Rebound: stdin closes, Rebound
	// exits, nothing is left behind.
	pid2 := filepath.Join(dir, "mock2.pid")
	p.send(t, `{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":[`+mcpServerJSON(t, "mock", pid2)+`]}}`)
	_, resp = p.until(t, 4)
	sid2, _ := resp["result"].(map[string]any)["sessionId"].(string)
	p.send(t, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"`+sid2+`","prompt":[{"type":"text","text":"hi"}]}}`)
	p.until(t, 5)
	pid = waitPID(t, pid2)
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("agent exit: %v\nstderr:\n%s", err, p.stderr)
	}
	if !gone(pid) {
		t.Errorf("the MCP server (pid %d) still runs after Rebound exited", pid)
	}
}

// spawnFullAccess starts the built binary in full_access mode (nothing
// asks permission) against mock over loopback HTTP, in a temporary dir.
func spawnFullAccess(t *testing.T, mock *mockprovider.Mock) (*agentProc, string) {
	t.Helper()
	srv := httptest.NewServer(mock)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[agent]\ndefault_mode = \"full_access\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a guard against a hang, not a wait
	t.Cleanup(cancel)
	p := spawn(t, ctx, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=k", "REBOUND_STATE_DIR="+filepath.Join(dir, "state"),
		"REBOUND_MODEL=mock-model", "REBOUND_CONFIG="+cfg)
	return p, dir
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestE2E_MCPServerDiesMidSession: a server that exits during a call fails
// that call, the next call to it fails at once naming it, the editor gets
// one notice, and the turn goes on to its end.
func TestE2E_MCPServerDiesMidSession(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{ToolCalls: []mockprovider.ToolCall{{ID: "c1", Name: "mcp__mock__crash", Arguments: `{}`}}},
		{ToolCalls: []mockprovider.ToolCall{{ID: "c2", Name: "mcp__mock__echo", Arguments: `{"text":"anyone?"}`}}},
		{Text: "The server is gone."},
	}})
	p, dir := spawnFullAccess(t, mock)
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"session":{"notices":{}}}}}`)
	p.until(t, 0)
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":[`+mcpServerJSON(t, "mock", filepath.Join(dir, "mock.pid"))+`]}}`)
	_, resp := p.until(t, 1)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"crash it"}]}}`)
	notes, resp := p.until(t, 2)
	if got := resp["result"].(map[string]any)["stopReason"]; got != "end_turn" {
		t.Fatalf("stopReason = %v (%v)\nstderr:\n%s", got, resp, p.stderr)
	}
	transcript := mustMarshal(notes)
	if n := strings.Count(transcript, `"sessionUpdate":"notice"`); n != 1 || !strings.Contains(transcript, `MCP server \"mock\" is not available`) {
		t.Errorf("%d notices, want one naming the server:\n%s", n, transcript)
	}
	reqs := mock.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d provider requests, want 3", len(reqs))
	}
	for i, r := range reqs[1:] {
		last := r.Messages[len(r.Messages)-1]
		if last.Role != "tool" || !strings.Contains(last.Content, `MCP server "mock"`) {
			t.Errorf("request %d: the model got %+v, want a failure naming the server", i+2, last)
		}
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("agent exit: %v\nstderr:\n%s", err, p.stderr)
	}
}

// TestE2E_MCPCloseDuringStart: closing a session whose server is still
// starting (it never answers) gives the start up and stops the process,
// without waiting out the start timeout.
func TestE2E_MCPCloseDuringStart(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	p, dir := spawnFullAccess(t, mockprovider.New(nil))
	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until(t, 0)
	pidFile := filepath.Join(dir, "silent.pid")
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":[`+mcpServerJSON(t, "silent", pidFile, mcpmock.EnvSilent+"=1")+`]}}`)
	_, resp := p.until(t, 1)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	pid := waitPID(t, pidFile)
	start := time.Now()
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/close","params":{"sessionId":"`+sid+`"}}`)
	if _, resp := p.until(t, 2); resp["error"] != nil {
		t.Fatalf("session/close: %v", resp)
	}
	if took := time.Since(start); took > 8*time.Second { // the start timeout is 10s; the stop grace is 2s twice
		t.Errorf("session/close took %v: it waited for the start instead of cancelling it", took)
	}
	if !gone(pid) {
		t.Errorf("the starting MCP server (pid %d) still runs after session/close", pid)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("agent exit: %v\nstderr:\n%s", err, p.stderr)
	}
}
