package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// retryMeta returns the `_meta["rebound/retry"]` payload of a
// session_info_update notification, or nil for any other message.
func retryMeta(msg map[string]any) map[string]any {
	if msg["method"] != "session/update" {
		return nil
	}
	params, _ := msg["params"].(map[string]any)
	u, _ := params["update"].(map[string]any)
	if u["sessionUpdate"] != "session_info_update" {
		return nil
	}
	meta, _ := u["_meta"].(map[string]any)
	p, _ := meta["rebound/retry"].(map[string]any)
	return p
}

// updateKind returns params.update.sessionUpdate of a session/update, or "".
func updateKind(msg map[string]any) (string, map[string]any) {
	if msg["method"] != "session/update" {
		return "", nil
	}
	params, _ := msg["params"].(map[string]any)
	u, _ := params["update"].(map[string]any)
	kind, _ := u["sessionUpdate"].(string)
	return kind, u
}

// lastLLMRetry decodes the last llm/retry of events.
func lastLLMRetry(t *testing.T, events []session.Event) (session.LLMRetry, bool) {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != session.TypeLLMRetry {
			continue
		}
		var d session.LLMRetry
		if err := json.Unmarshal(events[i].Data, &d); err != nil {
			t.Fatalf("llm/retry data %s: %v", events[i].Data, err)
		}
		return d, true
	}
	return session.LLMRetry{}, false
}

// TestE2E_CrashDuringRetryWaitThenLoad kills the built binary (SIGKILL)
// while it waits out a provider's Retry-After, then starts a new process on
// the same state directory and loads the session: the log must be valid,
// the interrupted turn closed, and the next prompt must continue the same
// retry chain (same retryId, next retry number) instead of starting a fresh
// budget.
func TestE2E_CrashDuringRetryWaitThenLoad(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		// Process A: rate limited, asked to wait 30 s; A is killed in that wait.
		{Status: 429, Headers: map[string]string{"Retry-After": "30"}},
		// Process B, next prompt: the chain goes on with a server error...
		{Status: 500},
		// ...and its retry succeeds.
		{Text: "recovered"},
	}})
	srv := httptest.NewServer(mock)
	defer srv.Close()

	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "config.toml")
	// share_limits off: the 30 s A was asked to wait is shared through the
	// state directory, and would hold B's first request (as it should); this
	// test is about the retry chain going on across the crash.
	if err := os.WriteFile(cfg, []byte(`[provider]
share_limits = false

[recovery]
max_retries = 3
initial_delay = "10ms"
max_delay = "100ms"
jitter = 0.0
max_retry_after = "60s"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e-secret",
		"REBOUND_STATE_DIR=" + state, "REBOUND_MODEL=mock-model", "REBOUND_CONFIG=" + cfg}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()

	// --- Process A: prompt, first attempt fails, retry 1 scheduled for 30 s.
	a := spawn(t, ctx, env...)
	a.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	a.until(t, 0)
	a.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp := a.until(t, 1)
	sid := resp["result"].(map[string]any)["sessionId"].(string)
	a.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hello before the crash"}]}}`)
	var scheduledA map[string]any
	for scheduledA == nil {
		msg := a.next(t)
		if msg["id"] == 2.0 && msg["method"] == nil {
			t.Fatalf("the prompt was answered before a retry was scheduled: %v", msg)
		}
		if kind, _ := updateKind(msg); kind == "agent_message_chunk" {
			t.Fatalf("a reply was sent before the failure: %v", msg)
		}
		if p := retryMeta(msg); p != nil && p["phase"] == "scheduled" {
			scheduledA = p
		}
	}
	retryID, _ := scheduledA["retryId"].(string)
	if retryID == "" || scheduledA["retry"] != 1.0 || scheduledA["maxRetries"] != 3.0 || scheduledA["delayMs"] != 30000.0 {
		t.Fatalf("scheduled in A = %v, want retry 1 of 3 with a retryId and delayMs 30000", scheduledA)
	}
	if f, _ := scheduledA["failure"].(map[string]any); f["code"] != "RATE_LIMIT" || f["status"] != 429.0 {
		t.Errorf("scheduled failure = %v, want RATE_LIMIT 429", scheduledA["failure"])
	}

	// kill -9 during the wait.
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := a.cmd.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("process A: %v, want killed by SIGKILL\nstderr:\n%s", err, a.stderr)
	}
	if mock.Count() != 1 {
		t.Fatalf("provider requests after A = %d, want 1 (the retry must not have gone out)", mock.Count())
	}

	// The retry was made durable before the wait: it is the log's last
	// event but for the wait's status card, which the editor may be sent
	// (and the log written) after the scheduled notice the kill followed.
	path := session.Path(state, sid)
	crashed, err := session.Load(path)
	if err != nil {
		t.Fatalf("load the log A left: %v", err)
	}
	last := crashed.Events[len(crashed.Events)-1]
	for i := len(crashed.Events) - 1; i > 0 && last.Type == session.TypeStatus; i-- {
		last = crashed.Events[i-1]
	}
	if last.Type != session.TypeLLMRetry {
		t.Fatalf("last event but status cards after the kill = %s %s, want llm/retry", last.Type, last.Data)
	}
	if d, _ := lastLLMRetry(t, crashed.Events); d.RetryID != retryID || d.Retry != 1 || d.Turn != 1 || d.DelayMs != 30000 {
		t.Errorf("llm/retry on disk: turn %d, retry %d of %q, delayMs %d; want turn 1, retry 1 of %q, delayMs 30000", d.Turn, d.Retry, d.RetryID, d.DelayMs, retryID)
	}
	if crashed.OpenTurn != 1 || crashed.OpenStep != 0 {
		t.Errorf("open turn/step after the kill = %d/%d, want 1/0 (the failed step was closed before the retry)", crashed.OpenTurn, crashed.OpenStep)
	}
	if id, n, _ := session.RetryChain(crashed.Events); id != retryID || n != 1 {
		t.Errorf("RetryChain after the kill = %q, %d; want %q, 1", id, n, retryID)
	}

	// --- Process B: same state dir and config; load the session.
	b := spawn(t, ctx, env...)
	b.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if _, resp := b.until(t, 0); resp["result"] == nil {
		t.Fatalf("initialize in B: %v", resp)
	}
	b.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"/tmp","mcpServers":[]}}`)
	notes, resp := b.until(t, 1)
	if resp["error"] != nil || resp["result"] == nil {
		t.Fatalf("session/load answered %v, want a result", resp)
	}
	var replayed []string
	statuses, marks := 0, 0
	for i, n := range notes {
		kind, u := updateKind(n)
		switch kind {
		case "user_message_chunk":
			replayed = append(replayed, u["content"].(map[string]any)["text"].(string))
		case "agent_message_chunk":
			// Nothing was committed: the only text is the mark that ends a
			// turn Rebound's stop cut, last.
			if text, _ := u["content"].(map[string]any)["text"].(string); text != recovery.StoppedMark(false) || i != len(notes)-1 {
				t.Errorf("replay sent %s (note %d of %d), but nothing was committed: %v", kind, i+1, len(notes), n)
			}
			marks++
		case "agent_thought_chunk":
			t.Errorf("replay sent %s, but nothing was committed: %v", kind, n)
		case "tool_call":
			// The wait that the kill cut short, as a client without
			// notices is shown it.
			if title, _ := u["title"].(string); u["status"] != "failed" || !strings.Contains(title, "interrupted") {
				t.Errorf("the wait replays as %v, want it failed and interrupted", u)
			}
			statuses++
		default:
			t.Errorf("unexpected message during replay: %v", n)
		}
	}
	if statuses != 1 {
		t.Errorf("%d statuses replayed, want the one wait", statuses)
	}
	if marks != 1 {
		t.Errorf("%d interrupted marks replayed, want one at the turn's end", marks)
	}
	if !slices.Equal(replayed, []string{"hello before the crash"}) {
		t.Errorf("replayed user messages = %q, want the interrupted turn's prompt", replayed)
	}

	loaded, err := session.Load(path)
	if err != nil {
		t.Fatalf("log after session/load is invalid: %v", err)
	}
	if loaded.OpenTurn != 0 {
		t.Errorf("turn %d still open after session/load", loaded.OpenTurn)
	}
	last = loaded.Events[len(loaded.Events)-1]
	var end session.TurnEnd
	if err := json.Unmarshal(last.Data, &end); last.Type != session.TypeTurnEnd || err != nil || end.Turn != 1 || !end.Interrupted {
		t.Fatalf("last event after session/load = %s %s, want turn/end of turn 1 with interrupted: true", last.Type, last.Data)
	}
	if id, n, _ := session.RetryChain(loaded.Events); id != retryID || n != 1 {
		t.Errorf("RetryChain after the interrupted turn/end = %q, %d; want %q, 1 (carried)", id, n, retryID)
	}

	// --- The chain continues: the next prompt fails (500) and is retried
	// as retry 2 of the same chain, then succeeds.
	b.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hello after the crash"}]}}`)
	notes, resp = b.until(t, 2)
	if resp["error"] != nil {
		t.Fatalf("prompt in B failed: %v", resp["error"])
	}
	if got := resp["result"].(map[string]any)["stopReason"]; got != "end_turn" {
		t.Fatalf("stopReason = %v, want end_turn (%v)", got, resp)
	}
	var (
		scheduledB []map[string]any
		phases     []string
		text       strings.Builder
	)
	for _, n := range notes {
		if p := retryMeta(n); p != nil {
			phases = append(phases, p["phase"].(string))
			if p["phase"] == "scheduled" {
				scheduledB = append(scheduledB, p)
			}
			if p["retryId"] != retryID || p["retry"] != 2.0 {
				t.Errorf("retry progress in B = %v, want retry 2 of %q", p, retryID)
			}
		}
		if kind, u := updateKind(n); kind == "agent_message_chunk" {
			text.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	if !slices.Equal(phases, []string{"scheduled", "started"}) {
		t.Errorf("retry phases in B = %v, want [scheduled started]", phases)
	}
	if len(scheduledB) != 1 {
		t.Fatalf("retries scheduled in B = %d, want 1", len(scheduledB))
	}
	if p := scheduledB[0]; p["delayMs"] != 20.0 { // backoff of retry 2: 10ms·2, no jitter
		t.Errorf("delayMs of retry 2 = %v, want 20", p["delayMs"])
	}
	if f, _ := scheduledB[0]["failure"].(map[string]any); f["code"] != "SERVER" || f["status"] != 500.0 {
		t.Errorf("failure of retry 2 = %v, want SERVER 500", scheduledB[0]["failure"])
	}
	if text.String() != "recovered" {
		t.Errorf("reply = %q, want %q", text.String(), "recovered")
	}
	retriesScheduled := 1 + len(scheduledB)
	if mock.Count() != 1+retriesScheduled {
		t.Errorf("provider requests = %d, want 1 + %d retries", mock.Count(), retriesScheduled)
	}
	// The request that succeeded carried the whole committed conversation:
	// both prompts, the interrupted one first.
	reqs := mock.Requests()
	var users []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if !slices.Equal(users, []string{"hello before the crash", "hello after the crash"}) {
		t.Errorf("user messages of the last provider request = %q", users)
	}

	b.stdin.Close()
	if err := b.cmd.Wait(); err != nil {
		t.Errorf("process B exit: %v\nstderr:\n%s", err, b.stderr)
	}
	final, err := session.Load(path)
	if err != nil {
		t.Fatalf("final log is invalid: %v", err)
	}
	if final.OpenTurn != 0 || len(final.Warnings) != 0 {
		t.Errorf("final log: open turn %d, warnings %q", final.OpenTurn, final.Warnings)
	}
	if id, n, _ := session.RetryChain(final.Events); id != "" || n != 0 {
		t.Errorf("RetryChain of the final log = %q, %d; want the chain finished", id, n)
	}
	var types []string
	for _, ev := range final.Events {
		// How many chunks is the mock's business; whether A recorded its
		// status before the kill is the race's.
		if ev.Type != session.TypeAssistantChunk && ev.Type != session.TypeStatus {
			types = append(types, ev.Type)
		}
	}
	want := []string{
		"session/start",
		"turn/start", "step/start", "step/end", "llm/retry", // process A, killed in the wait
		"turn/end", // written by B's session/load: interrupted
		"turn/start", "step/start", "step/end", "llm/retry", "llm/retry-started",
		"step/start", "assistant/message", "step/end", "turn/end",
	}
	if !slices.Equal(types, want) {
		t.Errorf("event types =\n%q\nwant\n%q", types, want)
	}
	if d, _ := lastLLMRetry(t, final.Events); d.RetryID != retryID || d.Retry != 2 || d.Turn != 2 {
		t.Errorf("last llm/retry: turn %d, retry %d of %q; want turn 2, retry 2 of %q", d.Turn, d.Retry, d.RetryID, retryID)
	}
	if strings.Contains(b.stderr.String(), "sk-e2e-secret") || strings.Contains(a.stderr.String(), "sk-e2e-secret") {
		t.Error("the API key appears in stderr")
	}
}

// TestE2E_CrashMidStreamThenLoad kills the built binary (SIGKILL) while a
// live reply streams: a new process loading the session replays what the
// user saw and commits it as an incomplete reply.
func TestE2E_CrashMidStreamThenLoad(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{Text: "one two three four five six seven eight nine ten", Chunks: 10, ChunkDelay: "300ms"},
		{Text: "Picking up again."},
	}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	state := t.TempDir()
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e-secret", "REBOUND_STATE_DIR=" + state, "REBOUND_STREAMING=live"}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()

	a := spawn(t, ctx, env...)
	sid := a.newSession(t, "/tmp")
	a.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"count"}]}}`)
	// Five chunks shown, 300 ms apart: by the fifth, the first four are
	// past the log's 100 ms write delay.
	var shown, early strings.Builder
	for n := 0; n < 5; {
		msg := a.next(t)
		if kind, u := updateKind(msg); kind == "agent_message_chunk" {
			text := u["content"].(map[string]any)["text"].(string)
			shown.WriteString(text)
			if n < 4 {
				early.WriteString(text)
			}
			n++
		}
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()

	b := spawn(t, ctx, env...)
	notes := b.loadSession(t, sid, "/tmp")
	var replayed strings.Builder
	for _, n := range notes {
		if kind, u := updateKind(n); kind == "agent_message_chunk" {
			replayed.WriteString(u["content"].(map[string]any)["text"].(string))
		}
	}
	// The cut reply ends with the mark that says so (none shown: the mark
	// alone).
	cut, marked := strings.CutSuffix(replayed.String(), "\n\n"+recovery.StoppedMark(true))
	if !marked {
		cut, marked = strings.CutSuffix(replayed.String(), recovery.StoppedMark(false))
	}
	if !marked {
		t.Errorf("replayed %q: want it to end with the interrupted mark", replayed.String())
	}
	replayed.Reset()
	replayed.WriteString(cut)
	if !strings.HasPrefix(shown.String(), replayed.String()) || !strings.HasPrefix(replayed.String(), early.String()) {
		t.Errorf("replayed %q: want a prefix of what was shown (%q) holding at least the chunks older than 100 ms (%q)",
			replayed.String(), shown.String(), early.String())
	}
	b.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"go on"}]}}`)
	if _, resp := b.until(t, 2); resp["result"] == nil {
		t.Fatalf("prompt after the crash: %v", resp)
	}
	b.stdin.Close()
	if err := b.cmd.Wait(); err != nil {
		t.Errorf("process B exit: %v\nstderr:\n%s", err, b.stderr)
	}
	final, err := session.Load(session.Path(state, sid))
	if err != nil {
		t.Fatalf("final log: %v", err)
	}
	msgs, err := session.Conversation(final.Events)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) < 2 || !msgs[1].Incomplete || msgs[1].Text != replayed.String() {
		t.Errorf("conversation after the crash: %+v; want the shown text committed as incomplete", msgs)
	}
}

// TestE2E_CrashRightAfterLiveChunksThenLoad kills the built binary
// (SIGKILL) the moment the editor has read a live reply's first chunks, ten
// times: every character shown is in the replay of session/load, because a
// chunk's record is written before the update that shows it (issue #19).
func TestE2E_CrashRightAfterLiveChunksThenLoad(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for try := range 10 {
		mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
			{Text: "alpha bravo charlie delta echo foxtrot golf hotel india juliett", Chunks: 10, ChunkDelay: "20ms"},
		}})
		srv := httptest.NewServer(mock)
		state := t.TempDir()
		env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e-secret", "REBOUND_STATE_DIR=" + state, "REBOUND_STREAMING=live"}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait

		a := spawn(t, ctx, env...)
		sid := a.newSession(t, "/tmp")
		a.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"spell"}]}}`)
		var shown strings.Builder
		for n := 0; n < 2; {
			if kind, u := updateKind(a.next(t)); kind == "agent_message_chunk" {
				shown.WriteString(u["content"].(map[string]any)["text"].(string))
				n++
			}
		}
		if err := a.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		a.cmd.Wait()

		b := spawn(t, ctx, env...)
		var replayed strings.Builder
		for _, n := range b.loadSession(t, sid, "/tmp") {
			if kind, u := updateKind(n); kind == "agent_message_chunk" {
				replayed.WriteString(u["content"].(map[string]any)["text"].(string))
			}
		}
		b.stdin.Close()
		b.cmd.Wait()
		srv.Close()
		cancel()
		// The file may hold a chunk more than the editor read, never less.
		if !strings.HasPrefix(replayed.String(), shown.String()) {
			t.Errorf("try %d: replayed %q, want it to start with all that was shown, %q", try, replayed.String(), shown.String())
		}
	}
}
