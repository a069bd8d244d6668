package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/agent/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// Two Rebound processes (two editor windows) share a state dir. While the
// first has a session open, the second's session/load is refused with an
// error naming the first's pid, and the log stays valid; once the first
// exits, the second loads the session and prompts it.
func TestE2E_SessionOpenInTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Fallback: &mockprovider.Step{Text: "ok"}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e", "REBOUND_STATE_DIR=" + state}

	first := spawn(t, ctx, env...)
	sid := first.newSession(t, "/tmp")
	first.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi"}]}}`)
	if _, resp := first.until(t, 2); resp["result"] == nil {
		t.Fatalf("prompt in the first process: %v", resp)
	}

	second := spawn(t, ctx, env...)
	second.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	second.until(t, 0)
	second.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"/tmp","mcpServers":[]}}`)
	_, resp := second.until(t, 1)
	e, _ := resp["error"].(map[string]any)
	want := fmt.Sprintf("Session %s is open in another Rebound process (pid %d)", sid, first.cmd.Process.Pid)
	if e == nil || e["code"] != -32003.0 || !strings.HasPrefix(e["message"].(string), want) {
		t.Fatalf("session/load in the second process = %v, want -32003 %q…", resp, want)
	}
	if _, err := session.Load(session.Path(state, sid)); err != nil {
		t.Fatalf("the log is broken: %v", err)
	}

	first.stdin.Close()
	if err := first.cmd.Wait(); err != nil {
		t.Fatalf("first process: %v\n%s", err, first.stderr)
	}
	second.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"/tmp","mcpServers":[]}}`)
	if _, resp := second.until(t, 2); resp["result"] == nil {
		t.Fatalf("session/load once the first exited = %v", resp)
	}
	second.send(t, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"mine now"}]}}`)
	if _, resp := second.until(t, 3); resp["result"] == nil {
		t.Fatalf("prompt in the second process = %v", resp)
	}
	second.stdin.Close()
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second process: %v\n%s", err, second.stderr)
	}
	ld, err := session.Load(session.Path(state, sid))
	if err != nil || ld.OpenTurn != 0 {
		t.Fatalf("the log after both: %v, open turn %d", err, ld.OpenTurn)
	}
}
