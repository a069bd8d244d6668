package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// Two Rebound processes (two chats of an editor that starts one process
// per chat) share a state dir and one session (#17). Each holds the
// session's lock only while it writes, so the second loads and prompts the
// session while the first keeps it open, and the first's next request
// carries the second's turn. Two turns at once are still refused: -32003
// naming the pid of the process running the other, while a load meanwhile
// replays what is committed. The log stays valid throughout.
func TestE2E_SessionOpenInTwoProcesses(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	stall := 1
	mock := mockprovider.New(&mockprovider.Script{
		Steps: []mockprovider.Step{
			{Text: "one"}, {Text: "two"}, {Text: "three"},
			{Text: "a long reply", Chunks: 3, StallAfter: &stall},
		},
		Fallback: &mockprovider.Step{Text: "ok"},
	})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	state := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e", "REBOUND_STATE_DIR=" + state}
	prompt := func(p *agentProc, id int, sid, text string) map[string]any {
		t.Helper()
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":%q}]}}`, id, sid, text))
		_, resp := p.until(t, float64(id))
		return resp
	}

	first := spawn(t, ctx, env...)
	sid := first.newSession(t, "/tmp")
	if resp := prompt(first, 2, sid, "hi"); resp["result"] == nil {
		t.Fatalf("prompt in the first process: %v", resp)
	}

	second := spawn(t, ctx, env...)
	second.loadSession(t, sid, "/tmp") // fails the test unless answered with a result
	if resp := prompt(second, 2, sid, "from the second"); resp["result"] == nil {
		t.Fatalf("prompt in the second process while the first has the session open = %v", resp)
	}
	if resp := prompt(first, 3, sid, "first again"); resp["result"] == nil {
		t.Fatalf("prompt in the first again = %v", resp)
	}
	reqs := mock.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if n := len(msgs); n < 3 || msgs[n-3].Content != "from the second" || msgs[n-2].Content != "two" {
		t.Errorf("the first's request does not carry the second's turn before its prompt: %+v", msgs)
	}

	// Two turns at once: the first's stalls after its first chunk.
	first.send(t, `{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"a long one"}]}}`)
	for {
		msg := first.next(t)
		if msg["id"] == 4.0 {
			t.Fatalf("prompt answered before it stalled: %v", msg)
		}
		if kind, _ := updateKind(msg); kind == "agent_message_chunk" {
			break
		}
	}
	resp := prompt(second, 3, sid, "at once")
	e, _ := resp["error"].(map[string]any)
	want := fmt.Sprintf("Session %s is in use in another Rebound process (pid %d)", sid, first.cmd.Process.Pid)
	if e == nil || e["code"] != -32003.0 || !strings.HasPrefix(e["message"].(string), want) {
		t.Fatalf("prompt in the second during the first's turn = %v, want -32003 %q…", resp, want)
	}
	second.send(t, `{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"/tmp","mcpServers":[]}}`)
	if _, resp := second.until(t, 4); resp["result"] == nil {
		t.Fatalf("session/load during the first's turn = %v", resp)
	}
	first.send(t, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"`+sid+`"}}`)
	if _, resp := first.until(t, 4); resp["result"] == nil || resp["result"].(map[string]any)["stopReason"] != "cancelled" {
		t.Fatalf("the first's cancelled prompt = %v", resp)
	}
	if resp := prompt(second, 5, sid, "mine now"); resp["result"] == nil {
		t.Fatalf("prompt in the second once the first's turn ended = %v", resp)
	}

	for _, p := range []*agentProc{first, second} {
		p.stdin.Close()
		if err := p.cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", p.cmd.Process.Pid, err, p.stderr)
		}
	}
	ld, err := session.Load(session.Path(state, sid))
	if err != nil || ld.OpenTurn != 0 {
		t.Fatalf("the log after both: %v, open turn %+v", err, ld)
	}
	turns := 0
	for _, ev := range ld.Events {
		if ev.Type == session.TypeTurnEnd {
			turns++
		}
	}
	if turns != 5 {
		t.Errorf("%d turns in the log, want 5", turns)
	}
}
