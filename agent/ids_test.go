package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// calls is a reply asking for read_file with each of ids, as the provider
// named them.
func calls(ids ...string) func(context.Context, llm.Request) (llm.Stream, error) {
	var chunks []llm.Chunk
	for i, id := range ids {
		chunks = append(chunks, llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: i, ID: id, Name: "read_file", Arguments: `{"path":"missing.txt"}`}}})
	}
	return reply(append(chunks, llm.Chunk{FinishReason: llm.FinishToolCalls})...)
}

// shownIDs splits the tool_call updates e was sent into the model's calls
// (they carry the tool's name) and Rebound's status tool calls.
func shownIDs(e *editor) (model, status []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range e.updates {
		if u.SessionUpdate != acp.UpdateToolCall {
			continue
		}
		if u.Name != "" {
			model = append(model, u.ToolCallID)
		} else {
			status = append(status, u.ToolCallID)
		}
	}
	return model, status
}

// FuzzToolCallIDs: whatever ids the provider gives its tool calls
// (spelled like Rebound's own, empty, repeated in a reply or across
// turns, long, with control characters), the editor is shown every call
// under an id of its own that no id Rebound mints can equal, live and
// after a load, and a load shows each call under the id it had live; the
// provider is sent back the ids it wrote. Run it with
//
//	go test ./agent -run '^$' -fuzz FuzzToolCallIDs -fuzztime 500x
func FuzzToolCallIDs(f *testing.F) {
	f.Add("rebound_status_replay_3", "rebound_status_0123", "call_0")
	f.Add("call_0", "call_0", "call_0")
	f.Add("", "", "~rebound_x")
	f.Add("a\x00b\nc", strings.Repeat("x", 4096), "call 1")
	f.Add("rebound_", "~", "~~rebound_status_replay_3")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		synctest.Test(t, func(t *testing.T) { checkToolCallIDs(t, a, b, c) })
	})
}

func checkToolCallIDs(t *testing.T, a, b, c string) {
	dir := t.TempDir()
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
		limited, calls(a, b, c), text("one"), // turn 1: a wait (a status tool call), three calls
		calls(a, a), text("two"), // turn 2: the first id again, twice in one reply
	}}
	cfg := Config{Provider: p, StateDir: dir, WaitStatus: WaitStatusToolCall, Recovery: recovery.Config{Policy: recovery.Policy{
		MaxRetries: 1, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable}}}
	ag := testAgent(t, cfg)
	id := newSession(t, ag)
	live := &editor{}
	for _, text := range []string{"one", "two"} {
		if resp, err := prompt1(t.Context(), ag, id, text, live); err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("turn %q = %+v, %v", text, resp, err)
		}
	}
	ag.Close()

	model, status := shownIDs(live)
	if len(model) != 5 || len(status) == 0 {
		t.Fatalf("shown %d calls of the model and %d status calls, want 5 and some", len(model), len(status))
	}
	seen := map[string]bool{}
	for _, id := range status {
		if !strings.HasPrefix(id, reboundIDPrefix) {
			t.Errorf("status id %q is outside Rebound's namespace", id)
		}
		seen[id] = true
	}
	for _, id := range model {
		switch {
		case seen[id]:
			t.Errorf("call id %q is shown twice, or is a status's", id)
		case strings.HasPrefix(id, reboundIDPrefix):
			t.Errorf("call id %q is in Rebound's namespace", id)
		case id == "" || len(id) > maxCallIDBytes:
			t.Errorf("call id %q is empty or unbounded", id)
		}
		seen[id] = true
	}

	// The provider reads its own ids back: an empty one gets the id the
	// editor was shown.
	want := func(provider string, shown int) string {
		if provider == "" {
			return model[shown]
		}
		return provider
	}
	checkSentBack(t, p.reqs[2].Messages, []string{want(a, 0), want(b, 1), want(c, 2)})
	checkSentBack(t, p.reqs[4].Messages, []string{want(a, 3), want(a, 4)})

	// A load shows each call under its live id, and statuses apart.
	ag = testAgent(t, cfg)
	loaded := &editor{}
	if _, err := ag.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: dir}, loaded); err != nil {
		t.Fatal(err)
	}
	replayed, replayedStatus := shownIDs(loaded)
	if strings.Join(replayed, "\x00") != strings.Join(model, "\x00") {
		t.Errorf("replayed call ids %q, want the live ones %q", replayed, model)
	}
	for _, id := range replayedStatus {
		if !strings.HasPrefix(id, reboundIDPrefix) {
			t.Errorf("replayed status id %q is outside Rebound's namespace", id)
		}
		for _, m := range model {
			if m == id {
				t.Errorf("replayed status id %q is a call's", id)
			}
		}
	}

	// An older log may hold any id: what a load shows of it is still
	// never Rebound's, and two ids stay two.
	for _, x := range []string{a, b, c} {
		s := shownCallID(x)
		if strings.HasPrefix(s, reboundIDPrefix) {
			t.Errorf("shownCallID(%q) = %q, in Rebound's namespace", x, s)
		}
		if providerCallID(x) && s != x {
			t.Errorf("shownCallID(%q) = %q: an id toolCalls keeps must be shown as it is", x, s)
		}
		for _, y := range []string{a, b, c} {
			if x != y && s == shownCallID(y) {
				t.Errorf("shownCallID(%q) = shownCallID(%q) = %q", x, y, s)
			}
		}
	}
}

// checkSentBack checks the last assistant message with tool calls in msgs
// names want, and is answered under the same ids.
func checkSentBack(t *testing.T, msgs []llm.Message, want []string) {
	t.Helper()
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		var got, answered []string
		for _, tc := range m.ToolCalls {
			got = append(got, tc.ID)
		}
		for _, r := range msgs[i+1:] {
			if r.Role == llm.RoleTool {
				answered = append(answered, r.ToolCallID)
			}
		}
		g, _ := json.Marshal([][]string{got, answered})
		w, _ := json.Marshal([][]string{want, want})
		if string(g) != string(w) {
			t.Errorf("the provider was sent calls and results %s, want %s", g, w)
		}
		return
	}
	t.Errorf("no assistant message with tool calls in the request")
}

// A call id an older log holds verbatim in Rebound's namespace is shown
// escaped on load, so it cannot be taken for a replayed status.
func TestReplayedToolCall_EscapesRebounds(t *testing.T) {
	m := session.Message{Role: session.RoleTool, ToolCallID: "rebound_status_replay_7", ToolName: "read_file", Status: session.ToolFailed}
	if u := replayedToolCall(m, nil); u.ToolCallID != "~rebound_status_replay_7" {
		t.Errorf("replayed id %q", u.ToolCallID)
	}
}
