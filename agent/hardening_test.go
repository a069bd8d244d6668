package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// These pin what the hardening issue asked for: one writer per session log,
// bounded summaries, turns that survive panics, bounded open logs, and disk
// failures that are Rebound's own and heal.

// script is a provider whose n-th request (from 0) is answered by
// answers[n], or by the last answer once they run out.
type script struct {
	mu      sync.Mutex
	answers []func(ctx context.Context, req llm.Request) (llm.Stream, error)
	reqs    []llm.Request
}

func (p *script) Stream(ctx context.Context, req llm.Request) (llm.Stream, error) {
	p.mu.Lock()
	n := len(p.reqs)
	req.Messages = slices.Clone(req.Messages) // the agent reuses the slice (llm.Provider)
	p.reqs = append(p.reqs, req)
	answer := p.answers[min(n, len(p.answers)-1)]
	p.mu.Unlock()
	return answer(ctx, req)
}

func (p *script) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// funcStream calls recv for each chunk.
type funcStream func() (llm.Chunk, error)

func (f funcStream) Recv() (llm.Chunk, error) { return f() }
func (f funcStream) Close() error             { return nil }

// reply streams chunks, then io.EOF.
func reply(chunks ...llm.Chunk) func(context.Context, llm.Request) (llm.Stream, error) {
	return func(context.Context, llm.Request) (llm.Stream, error) {
		i := 0
		return funcStream(func() (llm.Chunk, error) {
			if i == len(chunks) {
				return llm.Chunk{}, io.EOF
			}
			i++
			return chunks[i-1], nil
		}), nil
	}
}

func text(s string) func(context.Context, llm.Request) (llm.Stream, error) {
	return reply(llm.Chunk{Content: s}, llm.Chunk{FinishReason: llm.FinishStop})
}

// stall answers nothing until the request is aborted.
func stall(ctx context.Context, _ llm.Request) (llm.Stream, error) {
	return funcStream(func() (llm.Chunk, error) {
		<-ctx.Done()
		return llm.Chunk{}, context.Cause(ctx)
	}), nil
}

func overflow(context.Context, llm.Request) (llm.Stream, error) {
	return nil, &llm.Error{Status: 400, Code: "context_length_exceeded", Message: "too long"}
}

// editor is an acp.Client that keeps updates and offers nothing else.
type editor struct {
	acp.Client
	mu      sync.Mutex
	updates []acp.SessionUpdate
	onTool  func()   // called on a tool_call update
	errs    []string // the failed prompts' error messages, where a test keeps them
}

func (e *editor) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	if u.SessionUpdate == acp.UpdateToolCall && e.onTool != nil {
		e.onTool()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates = append(e.updates, u)
	return nil
}

func (e *editor) Capabilities() acp.ClientCapabilities { return acp.ClientCapabilities{} }

func testAgent(t *testing.T, cfg Config) *Agent {
	t.Helper()
	cfg.Model = "m"
	cfg.MaxTokens = 100
	cfg.APIKeyEnv = "OPENAI_API_KEY"
	cfg.Logger = zerolog.Nop()
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	a := New(cfg)
	t.Cleanup(func() { a.Close() })
	return a
}

func newSession(t *testing.T, a *Agent) string {
	t.Helper()
	res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return res.SessionID
}

func ask(ctx context.Context, a *Agent, id, prompt string) (acp.PromptResponse, error) {
	return a.Prompt(ctx, acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}, &editor{})
}

// promptGo sends the prompt "go" with c as the editor, and fails the test
// if the turn returns an error.
func promptGo(t *testing.T, a *Agent, id string, c acp.Client) {
	t.Helper()
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("go")}}, c); err != nil {
		t.Fatal(err)
	}
}

// mustLoad checks the session's log on disk and returns its events.
func mustLoad(t *testing.T, a *Agent, id string) []session.Event {
	t.Helper()
	ld, err := session.Load(session.Path(a.cfg.StateDir, id))
	if err != nil {
		t.Fatalf("the log does not load: %v", err)
	}
	if ld.OpenTurn != 0 || ld.TornBytes != 0 {
		t.Errorf("the log has open turn %d, %d torn bytes", ld.OpenTurn, ld.TornBytes)
	}
	return ld.Events
}

func count(events []session.Event, typ string) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func lastTurnEnd(t *testing.T, events []session.Event) string {
	t.Helper()
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type == session.TypeTurnEnd {
			return string(events[i].Data)
		}
	}
	t.Fatal("no turn/end")
	return ""
}

// #1, #17: two Rebound processes (here: two agents, whose logs are
// separate open files, as two processes' are) share a state dir, as
// editors that start one process per chat do. Either may use a session
// whenever the other is not writing it: each picks up the other's turns
// and settings before it writes. Two turns at once are refused with
// -32003, naming the process that runs the other; a load meanwhile
// replays what is committed and writes nothing.
func TestAgent_SessionOpenInAnotherProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
			text("one"), text("two"), text("three"), stall, text("five"),
		}}
		// A long idle timeout: nothing here waits for a log to be let go.
		first := testAgent(t, Config{StateDir: dir, Provider: p, LogIdleTimeout: time.Hour})
		second := testAgent(t, Config{StateDir: dir, Provider: p, LogIdleTimeout: time.Hour})
		id := newSession(t, first)
		if _, err := ask(t.Context(), first, id, "hi"); err != nil {
			t.Fatal(err)
		}

		if _, err := second.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &editor{}); err != nil {
			t.Fatalf("LoadSession in the second process = %v, want it loaded", err)
		}
		if _, err := ask(t.Context(), second, id, "from the second"); err != nil {
			t.Fatalf("Prompt in the second process = %v", err)
		}
		if _, err := second.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: ModeReadOnly}, &editor{}); err != nil {
			t.Fatalf("SetSessionMode in the second process = %v", err)
		}
		if _, err := ask(t.Context(), first, id, "first again"); err != nil {
			t.Fatalf("Prompt in the first again = %v", err)
		}
		// The first read the second's turn and mode before it wrote.
		last := p.reqs[2].Messages
		if got := last[len(last)-3].Content; got != "from the second" {
			t.Errorf("history before the prompt ends with %q, want the second process's turn", got)
		}
		if got := last[len(last)-2].Content; got != "two" {
			t.Errorf("the second's reply in the history is %q, want \"two\"", got)
		}
		if m := first.store.sessions[id].current().mode; m != ModeReadOnly {
			t.Errorf("the first's mode is %q, want the second's %q", m, ModeReadOnly)
		}
		if n := len(p.reqs[2].Tools); n != len(toolsFor(ModeReadOnly)) {
			t.Errorf("the first's request offers %d tools, want read_only's %d", n, len(toolsFor(ModeReadOnly)))
		}

		// Two turns at once.
		ctx, cancel := context.WithCancel(t.Context())
		running := make(chan error, 1)
		go func() {
			_, err := ask(ctx, first, id, "a long one")
			running <- err
		}()
		synctest.Wait() // the first's turn waits for the provider, holding the lock
		before, _ := os.ReadFile(session.Path(dir, id))
		_, err := ask(t.Context(), second, id, "at once")
		re, ok := errors.AsType[*acp.RequestError](err)
		if !ok || re.Code != acp.CodeSessionBusy {
			t.Fatalf("Prompt in the second during the first's turn = %v, want a -32003 RequestError", err)
		}
		want := "Session " + id + " is in use in another Rebound process (pid " + strconv.Itoa(os.Getpid()) + "), perhaps in another editor window"
		if runtime.GOOS == "linux" && !strings.HasPrefix(re.Message, want) {
			t.Errorf("message %q, want it to begin %q", re.Message, want)
		}
		t.Logf("the editor reads: %s", re.Message)
		if data := re.Data.(map[string]any); data["reason"] != "session_locked" {
			t.Errorf("data = %v, want reason session_locked", data)
		}
		// A load meanwhile needs no lock: it replays what is committed,
		// the running turn's prompt included, and leaves that turn alone.
		ed := &editor{}
		if _, err := second.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, ed); err != nil {
			t.Fatalf("LoadSession during the first's turn = %v", err)
		}
		if n := countUserChunks(ed); n != 4 {
			t.Errorf("the load replayed %d prompts, want 4", n)
		}
		if after, _ := os.ReadFile(session.Path(dir, id)); string(after) != string(before) {
			t.Errorf("the refused prompt or the load wrote the log:\n%s", after[len(before):])
		}
		cancel()
		if err := <-running; err != nil {
			t.Fatalf("the first's cancelled turn = %v", err)
		}
		if _, err := ask(t.Context(), second, id, "five"); err != nil {
			t.Fatalf("Prompt in the second once the first's turn ended = %v", err)
		}
		if n := count(mustLoad(t, second, id), session.TypeTurnEnd); n != 5 {
			t.Errorf("%d turns in the log, want 5", n)
		}
		first.Close()
		second.Close()
	})
}

func countUserChunks(e *editor) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, u := range e.updates {
		if u.SessionUpdate == acp.UpdateUserMessageChunk {
			n++
		}
	}
	return n
}

// #17: a session deleted by another process while this one has it open is
// gone here too: the next prompt or load says it is not found and writes
// nothing (appending to the unlinked file would lose the turn). A session
// the other is writing is not deleted.
func TestAgent_SessionDeletedByAnotherProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
	first := testAgent(t, Config{StateDir: dir, Provider: p})
	second := testAgent(t, Config{StateDir: dir, Provider: p})
	id := newSession(t, first)
	if _, err := ask(t.Context(), first, id, "hi"); err != nil {
		t.Fatal(err)
	}
	if _, err := second.DeleteSession(t.Context(), acp.DeleteSessionRequest{SessionID: id}); err != nil {
		t.Fatalf("DeleteSession while the other has it open, idle = %v", err)
	}
	_, err := ask(t.Context(), first, id, "still there?")
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeResourceNotFound {
		t.Errorf("Prompt after the other deleted it = %v, want -32002", err)
	}
	_, err = first.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &editor{})
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeResourceNotFound {
		t.Errorf("LoadSession after the other deleted it = %v, want -32002", err)
	}
	if _, err := os.Stat(session.Path(dir, id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the log is back: %v", err)
	}
}

// #1, #6: LogIdleTimeout now frees only the descriptor and the events of
// an idle session (its lock is let go of after every use): the next use
// opens the log again and reads it whole, another process's turns
// included.
func TestAgent_IdleSessionIsReleased(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
		first := testAgent(t, Config{StateDir: dir, Provider: p, LogIdleTimeout: time.Minute})
		second := testAgent(t, Config{StateDir: dir, Provider: p, LogIdleTimeout: time.Minute})
		id := newSession(t, first)
		if _, err := second.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &editor{}); err != nil {
			t.Fatalf("LoadSession while the first has it open = %v", err)
		}
		if _, err := ask(t.Context(), second, id, "from the second"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		first.store.mu.Lock()
		open := first.store.sessions[id].log != nil
		first.store.mu.Unlock()
		if open {
			t.Errorf("the first's log is open after a minute idle")
		}
		if _, err := ask(t.Context(), first, id, "first again"); err != nil {
			t.Fatalf("Prompt in the first after its log was closed = %v", err)
		}
		// The first saw the second's turn: it read the log again.
		last := p.reqs[len(p.reqs)-1].Messages
		if got := last[len(last)-3].Content; got != "from the second" {
			t.Errorf("history before the prompt ends with %q, want the second process's turn", got)
		}
		mustLoad(t, first, id)
	})
}

// #4: the summary request of a compaction runs under the watchdogs and a
// deadline: a provider that never answers it ends the compaction with an
// error saying so, instead of hanging the prompt forever.
func TestAgent_SummaryRequestIsBounded(t *testing.T) {
	tests := []struct {
		name     string
		recovery recovery.Config
		after    time.Duration // when the prompt must be answered
		msg      string
	}{
		{"first token watchdog", recovery.Config{Overflow: true, Watchdog: recovery.Timeouts{FirstToken: 30 * time.Second}}, 30 * time.Second,
			"no output from the provider within first_token_timeout (30s)"},
		{"attempt timeout", recovery.Config{Overflow: true, AttemptTimeout: 45 * time.Second}, 45 * time.Second,
			"the summary request did not finish within 45s (attempt_timeout)"},
		{"request deadline", recovery.Config{Overflow: true, RequestDeadline: 2 * time.Minute}, 2 * time.Minute,
			"the summary request did not finish within 2m0s (what was left of request_deadline 2m0s)"},
		{"nothing configured", recovery.Config{Overflow: true}, MaxSummaryTime,
			"the summary request did not finish within 5m0s (Rebound's limit for a summary)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("first reply"), overflow, stall}}
				a := testAgent(t, Config{StateDir: dir, Provider: p, Recovery: tt.recovery})
				id := newSession(t, a)
				if _, err := ask(t.Context(), a, id, "one"); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err := ask(t.Context(), a, id, "two")
				if took := time.Since(start); took != tt.after {
					t.Errorf("answered after %s, want %s", took, tt.after)
				}
				re, ok := errors.AsType[*acp.RequestError](err)
				if !ok || !strings.Contains(re.Message, tt.msg) || !strings.HasPrefix(re.Message, "The conversation is too long for the model") {
					t.Fatalf("error = %v, want the overflow and %q", err, tt.msg)
				}
				if p.count() != 3 {
					t.Errorf("%d provider requests, want 3 (reply, overflow, summary)", p.count())
				}
				if end := lastTurnEnd(t, mustLoad(t, a, id)); !strings.Contains(end, "CONTEXT_OVERFLOW") {
					t.Errorf("turn/end = %s, want the overflow's facts", end)
				}
			})
		})
	}
}

// #5: a panic anywhere in a turn still closes the turn in the log (what
// was shown committed, the step ended, pending tool calls answered,
// turn/end with the error), answers the prompt with an internal error,
// and the next prompt works.
func TestAgent_PanicInTurnSettlesIt(t *testing.T) {
	boom := func(context.Context, llm.Request) (llm.Stream, error) {
		return funcStream(func() (llm.Chunk, error) { panic("provider exploded") }), nil
	}
	shownThenBoom := func(context.Context, llm.Request) (llm.Stream, error) {
		sent := false
		return funcStream(func() (llm.Chunk, error) {
			if !sent {
				sent = true
				return llm.Chunk{Content: "Half a"}, nil
			}
			panic("provider exploded mid-reply")
		}), nil
	}
	toolCall := reply(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "read_file", Arguments: `{"path":"x"}`}}},
		llm.Chunk{FinishReason: llm.FinishToolCalls})
	tests := []struct {
		name    string
		live    bool
		first   func(context.Context, llm.Request) (llm.Stream, error)
		onTool  func()
		results int // tool results the panicked turn must have
		shown   string
	}{
		{name: "in the provider's stream", first: boom},
		{name: "in a live stream after text was shown", live: true, first: shownThenBoom, shown: "Half a"},
		{name: "while a tool call is pending", first: toolCall, onTool: func() { panic("editor exploded") }, results: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){tt.first, text("fine")}}
			a := testAgent(t, Config{Provider: p, Live: tt.live})
			id := newSession(t, a)
			// As the acp server does, a panic that escapes becomes an error:
			// what is checked is what the agent left in the log.
			_, err := func() (_ acp.PromptResponse, err error) {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("escaped panic: %v", r)
					}
				}()
				return a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("hi")}}, &editor{onTool: tt.onTool})
			}()
			events := mustLoad(t, a, id)
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || re.Code != acp.CodeInternalError || !strings.Contains(re.Message, "internal error") || !strings.Contains(re.Message, "exploded") {
				t.Errorf("Prompt = %v, want an internal error naming the panic", err)
			}
			if end := lastTurnEnd(t, events); !strings.Contains(end, `"error"`) {
				t.Errorf("turn/end = %s, want an error", end)
			}
			msgs, err := session.Conversation(events)
			if err != nil {
				t.Fatal(err)
			}
			results, shown := 0, ""
			for _, m := range msgs {
				if m.Role == session.RoleTool {
					results++
				}
				if m.Role == session.RoleAssistant && m.Incomplete {
					shown = m.Text
				}
			}
			if results != tt.results || shown != tt.shown {
				t.Errorf("%d tool results, incomplete reply %q; want %d, %q", results, shown, tt.results, tt.shown)
			}
			resp, err := ask(t.Context(), a, id, "again")
			if err != nil || resp.StopReason != acp.StopEndTurn {
				t.Fatalf("the next prompt = %v, %v; want end_turn", resp, err)
			}
			mustLoad(t, a, id)
		})
	}
}

// #5: what the loader accepts, a turn survives: compactions are checked on
// load, and a log with a nonsensical one is refused with its line rather
// than panicking a turn.
func TestAgent_NonsenseCompactionIsRefusedOnLoad(t *testing.T) {
	dir := t.TempDir()
	path := session.Path(dir, "sess_bad")
	os.MkdirAll(filepath.Dir(path), 0o700)
	lines := `{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"session/start","data":{"sessionId":"sess_bad","cwd":"/p"}}
{"seq":2,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{"turn":1,"prompt":[],"text":"hi"}}
{"seq":3,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/start","data":{"turn":1,"step":1}}
{"seq":4,"v":1,"time":"2000-01-01T00:00:00Z","type":"compaction","data":{"turn":1,"step":1,"summary":"s","replaced":-7}}
`
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("x")}}})
	_, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_bad", Cwd: "/p"}, &editor{})
	if err == nil || !strings.Contains(err.Error(), ":4: compaction replaces -7 messages: the count is not negative") {
		t.Errorf("LoadSession = %v, want the bad line named", err)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// #6: sessions do not each keep a file descriptor forever: at most
// MaxOpenLogs logs are open, the least recently used idle ones are closed,
// and every session still works (its log is opened again).
func TestAgent_OpenLogsAreBounded(t *testing.T) {
	const cap, sessions = 4, 40
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
	a := testAgent(t, Config{Provider: p, MaxOpenLogs: cap})
	base := openFDs(t)
	var ids []string
	for range sessions {
		id := newSession(t, a)
		ids = append(ids, id)
		if _, err := ask(t.Context(), a, id, "hi"); err != nil {
			t.Fatal(err)
		}
	}
	if n := openFDs(t); n > base+cap+2 {
		t.Errorf("%d file descriptors open after %d sessions, want at most %d + %d", n, sessions, base, cap)
	}
	for _, id := range ids {
		if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, &editor{}); err != nil {
			t.Fatalf("LoadSession %s: %v", id, err)
		}
		if _, err := ask(t.Context(), a, id, "again"); err != nil {
			t.Fatalf("Prompt %s after its log was closed: %v", id, err)
		}
	}
	if n := openFDs(t); n > base+cap+2 {
		t.Errorf("%d file descriptors open after using every session again, want at most %d + %d", n, base, cap)
	}
	for _, id := range ids {
		if n := count(mustLoad(t, a, id), session.TypeTurnEnd); n != 2 {
			t.Errorf("session %s: %d turns in the log, want 2", id, n)
		}
	}
}

// #6: a session/new that fails after its log was created leaves no file.
func TestAgent_FailedNewSessionLeavesNoLog(t *testing.T) {
	dir := t.TempDir()
	a := testAgent(t, Config{StateDir: dir})
	a.Close() // the session is created, then refused: the agent is shutting down
	if _, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"}); err == nil {
		t.Fatal("NewSession after Close succeeded")
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "sessions", "*")); len(logs) != 0 {
		t.Errorf("a failed session/new left %v", logs)
	}
}

// #15: an unwritable state dir is named with the setting that chose it and
// what to do, once.
func TestAgent_UnwritableStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(dir, nil, 0o600); err != nil { // a file where the directory should be: fails even as root
		t.Fatal(err)
	}
	a := testAgent(t, Config{StateDir: dir})
	_, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	re, ok := errors.AsType[*acp.RequestError](err)
	if !ok {
		t.Fatalf("NewSession = %v, want a RequestError", err)
	}
	for _, want := range []string{"Rebound could not create its session log " + dir + "/sessions/", "mkdir " + dir + ": not a directory",
		"REBOUND_STATE_DIR", "state_dir", "make it writable"} {
		if !strings.Contains(re.Message, want) {
			t.Errorf("message %q does not say %q", re.Message, want)
		}
	}
	t.Logf("the editor reads: %s", re.Message)
	if strings.Count(re.Message, "create") != 1 {
		t.Errorf("message repeats itself: %q", re.Message)
	}

	// Given where the directory came from, the message names that and
	// nothing the user never set.
	help := "the state directory " + dir + " comes from the default, ~/.local/state/rebound ($XDG_STATE_HOME is not set): make it writable, or choose another with --state-dir"
	b := testAgent(t, Config{StateDir: dir, StateDirHelp: help})
	_, err = b.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || !strings.Contains(re.Message, help) || strings.Contains(re.Message, "REBOUND_STATE_DIR") {
		t.Errorf("NewSession with the default state dir = %v, want it to say %q and not blame REBOUND_STATE_DIR", err, help)
	}
}

// failingDisk lets the first ok writes through, then fails every write as
// a full disk does.
type failingDisk struct {
	w    io.Writer
	path string
	ok   int
}

func (d *failingDisk) Write(p []byte) (int, error) {
	if d.ok == 0 {
		return 0, &os.PathError{Op: "write", Path: d.path, Err: syscall.ENOSPC}
	}
	d.ok--
	return d.w.Write(p)
}

// #7: the disk fills up during a live stream. The failure is Rebound's
// own: named with the log's path and what to do, never retried as a
// provider failure or blamed on the base URL; and once the disk has room
// again, session/load and the next prompt work (the log is reopened and
// its torn tail repaired) without a restart.
func TestAgent_FullDiskDuringStream(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		slow := func(context.Context, llm.Request) (llm.Stream, error) {
			chunks := []string{"Hel", "lo", " there"}
			return funcStream(func() (llm.Chunk, error) {
				if len(chunks) == 0 {
					return llm.Chunk{FinishReason: llm.FinishStop}, nil
				}
				time.Sleep(300 * time.Millisecond) // the log's flush timer fires meanwhile
				c := chunks[0]
				chunks = chunks[1:]
				return llm.Chunk{Content: c}, nil
			}), nil
		}
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){slow, text("after")}}
		a := testAgent(t, Config{StateDir: dir, Provider: p, Live: true, Recovery: recovery.Config{
			Policy: recovery.Policy{MaxRetries: 2, InitialDelay: time.Second, MaxDelay: time.Second, Retryable: recovery.DefaultRetryable},
		}})
		id := newSession(t, a)
		s, _ := a.store.lookup(id)
		path := session.Path(dir, id)
		// turn/start gets through (one write), then the disk is full.
		s.log.WrapWriter(func(w io.Writer) io.Writer { return &failingDisk{w: w, path: path, ok: 1} })

		_, err := ask(t.Context(), a, id, "hi")
		re, ok := errors.AsType[*acp.RequestError](err)
		want := "Rebound could not write its session log " + path + ": no space left on device; free disk space and try again"
		if !ok || !strings.HasPrefix(re.Message, want) {
			t.Fatalf("Prompt on a full disk = %v, want %q", err, want)
		}
		t.Logf("the editor reads: %s", re.Message)
		for _, wrong := range []string{"base URL", "connection", "provider"} {
			if strings.Contains(re.Message, wrong) {
				t.Errorf("message %q blames the %s", re.Message, wrong)
			}
		}
		if data := re.Data.(map[string]any); data["reason"] != "session_log_write" || data["path"] != path {
			t.Errorf("data = %v", data)
		}
		if p.count() != 1 {
			t.Errorf("%d provider requests, want 1: a disk failure is not retried", p.count())
		}

		// The disk has room again (the broken Log is dropped, and with it
		// the failing writer): load and prompt work.
		ed := &editor{}
		if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: "/p"}, ed); err != nil {
			t.Fatalf("LoadSession after the disk recovered = %v", err)
		}
		resp, err := ask(t.Context(), a, id, "again")
		if err != nil || resp.StopReason != acp.StopEndTurn {
			t.Fatalf("Prompt after the disk recovered = %v, %v", resp, err)
		}
		events := mustLoad(t, a, id)
		var ends []string
		for _, ev := range events {
			if ev.Type == session.TypeTurnEnd {
				ends = append(ends, string(ev.Data))
			}
		}
		if len(ends) != 2 || !strings.Contains(ends[0], "could not be recorded") || !strings.Contains(ends[0], "no space left on device") {
			t.Errorf("turn/ends = %q, want the failed turn closed saying why", ends)
		}
	})
}

// capsEditor is an editor that advertises caps, the JSON of its
// clientCapabilities.
type capsEditor struct {
	editor
	caps string
}

func (e *capsEditor) Capabilities() acp.ClientCapabilities {
	var caps acp.ClientCapabilities
	if err := json.Unmarshal([]byte(e.caps), &caps); err != nil {
		panic(err)
	}
	return caps
}

// A compaction that began is told as ended, also when its record cannot be
// written (a full disk): no compaction_update is left in_progress.
func TestCompact_FullDiskEndsTheCompactionUpdate(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("A long answer. ", 20)
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("A1. " + long), text("A2. " + long), text("Short summary.")}}
	a := testAgent(t, Config{StateDir: dir, Provider: p})
	id := newSession(t, a)
	for _, q := range []string{"Q1", "Q2"} {
		if _, err := ask(t.Context(), a, id, q); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := a.store.lookup(id)
	// The /compact turn's turn/start and step/start get through, then the
	// disk is full when the compaction is recorded.
	s.log.WrapWriter(func(w io.Writer) io.Writer { return &failingDisk{w: w, path: session.Path(dir, id), ok: 1} })
	ed := &capsEditor{caps: `{"session":{"compaction":{}}}`}
	if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("/compact")}}, ed); err == nil {
		t.Fatal("/compact on a full disk succeeded")
	}
	var statuses []string
	for _, u := range ed.updates {
		if u.SessionUpdate == acp.UpdateCompaction {
			statuses = append(statuses, u.Status)
		}
	}
	if !slices.Equal(statuses, []string{"in_progress", "failed"}) {
		t.Errorf("compaction_update statuses %q, want in_progress then failed", statuses)
	}
}
