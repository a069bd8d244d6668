package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// fakeProvider answers every request with the same chunks and records the
// requests it saw.
type fakeProvider struct {
	mu       sync.Mutex
	chunks   []llm.Chunk
	err      error // returned by Recv after the chunks, instead of io.EOF
	requests []llm.Request
}

func (p *fakeProvider) Stream(_ context.Context, req llm.Request) (llm.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req.Messages = slices.Clone(req.Messages) // the agent reuses the slice (llm.Provider)
	p.requests = append(p.requests, req)
	return &fakeStream{chunks: p.chunks, err: p.err}, nil
}

type fakeStream struct {
	chunks []llm.Chunk
	err    error
}

func (s *fakeStream) Recv() (llm.Chunk, error) {
	if len(s.chunks) == 0 {
		if s.err != nil {
			return llm.Chunk{}, s.err
		}
		return llm.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *fakeStream) Close() error { return nil }

// recorder is an acp.Client that keeps every update. It offers no fs or
// terminal, and these tests make no tool calls: the embedded nil Client
// makes any call to the editor fail loudly.
type recorder struct {
	acp.Client
	mu      sync.Mutex
	updates []acp.SessionUpdate
}

func (r *recorder) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, u)
	return nil
}

func (r *recorder) Capabilities() acp.ClientCapabilities { return acp.ClientCapabilities{} }

func (r *recorder) texts() []string {
	var out []string
	for _, u := range r.updates {
		out = append(out, u.SessionUpdate+": "+u.Content.Text)
	}
	return out
}

func newAgent(t *testing.T, dir string, p llm.Provider) *agent.Agent {
	t.Helper()
	a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: p, APIKeyEnv: "OPENAI_API_KEY", Logger: zerolog.Nop()})
	t.Cleanup(func() { a.Close() })
	return a
}

func prompt(text string) []acp.ContentBlock { return []acp.ContentBlock{acp.TextBlock(text)} }

func mustAppend(t *testing.T, l *session.Log, typ string, data any) {
	t.Helper()
	if _, err := l.Append(typ, data); err != nil {
		t.Fatal(err)
	}
}

// A process killed mid-turn leaves an open turn and step, and maybe a torn
// line. Loading the session closes them, replays only what was committed,
// and the next turn starts cleanly with the committed history.
func TestAgent_LoadAfterCrash(t *testing.T) {
	dir := t.TempDir()
	l, err := session.Create(dir, "sess_crashed", session.SessionStart{SessionID: "sess_crashed", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[{"type":"text","text":"hi"}]`), Text: "hi"})
	mustAppend(t, l, session.TypeStepStart, session.StepStart{Turn: 1, Step: 1})
	mustAppend(t, l, session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "half a rep"})
	l.Close()
	f, err := os.OpenFile(l.Path(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":5,"v":1,"ti`) // torn mid-write
	f.Close()

	p := &fakeProvider{chunks: []llm.Chunk{{Content: "hello"}, {FinishReason: "stop"}}}
	a := newAgent(t, dir, p)
	rec := &recorder{}
	if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_crashed", Cwd: "/p"}, rec); err != nil {
		t.Fatalf("LoadSession: %v", err)
	}
	// Nothing of the reply was committed (held mode): the turn says it
	// was cut where its reply would be.
	if diff := cmp.Diff([]string{"user_message_chunk: hi", "agent_message_chunk: " + recovery.StoppedMark(false)}, rec.texts()); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}

	rec = &recorder{}
	resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: "sess_crashed", Prompt: prompt("again")}, rec)
	if err != nil || resp.StopReason != acp.StopEndTurn {
		t.Fatalf("Prompt = %v, %v", resp, err)
	}
	// The interrupted turn is closed with a note, so roles still alternate.
	wantMsgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"},
		{Role: llm.RoleAssistant, Content: "(This turn was interrupted: the agent stopped before it finished.)"},
		{Role: llm.RoleUser, Content: "again"}}
	if diff := cmp.Diff(wantMsgs, p.requests[0].Messages[1:]); diff != "" {
		t.Errorf("history sent (-want +got):\n%s", diff)
	}

	loaded, err := session.Load(l.Path())
	if err != nil {
		t.Fatalf("log invalid after recovery: %v", err)
	}
	var types []string
	for _, ev := range loaded.Events[4:] {
		types = append(types, ev.Type)
	}
	// The new turn's reply is its message alone: the log keeps no chunks.
	want := []string{session.TypeStepEnd, session.TypeTurnEnd, session.TypeTurnStart, session.TypeStepStart,
		session.TypeAssistantMessage, session.TypeStepEnd, session.TypeTurnEnd}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events after the crash (-want +got):\n%s", diff)
	}
}

func TestAgent_UnknownSession(t *testing.T) {
	a := newAgent(t, t.TempDir(), &fakeProvider{})
	_, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: "sess_x", Prompt: prompt("hi")}, &recorder{})
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeResourceNotFound {
		t.Errorf("Prompt on unknown session = %v, want -32002", err)
	}
	_, err = a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_x", Cwd: "/p"}, &recorder{})
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeResourceNotFound {
		t.Errorf("LoadSession of unknown session = %v, want -32002", err)
	}
}

// finish_reason maps to the ACP stop reason; a finished stream with neither
// content nor a tool call is a failure, not an empty success.
func TestAgent_StopReasons(t *testing.T) {
	tests := []struct {
		name    string
		chunks  []llm.Chunk
		want    acp.StopReason
		wantErr bool
	}{
		{"stop", []llm.Chunk{{Content: "a"}, {FinishReason: "stop"}}, acp.StopEndTurn, false},
		{"length", []llm.Chunk{{Content: "a"}, {FinishReason: "length"}}, acp.StopMaxTokens, false},
		{"content filter", []llm.Chunk{{FinishReason: "content_filter"}}, acp.StopRefusal, false},
		// Other APIs' words, by their class (llm.ClassifyFinish), in any case.
		{"zhipu sensitive", []llm.Chunk{{Content: "a"}, {FinishReason: "sensitive"}}, acp.StopRefusal, false},
		{"gemini SAFETY", []llm.Chunk{{Content: "a"}, {FinishReason: "SAFETY"}}, acp.StopRefusal, false},
		{"anthropic max_tokens", []llm.Chunk{{Content: "a"}, {FinishReason: "max_tokens"}}, acp.StopMaxTokens, false},
		{"gemini MAX_TOKENS", []llm.Chunk{{Content: "a"}, {FinishReason: "MAX_TOKENS"}}, acp.StopMaxTokens, false},
		{"together eos", []llm.Chunk{{Content: "a"}, {FinishReason: "eos"}}, acp.StopEndTurn, false},
		{"empty", []llm.Chunk{{FinishReason: "stop"}}, "", true},
		{"empty, sensitive", []llm.Chunk{{FinishReason: "sensitive"}}, acp.StopRefusal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAgent(t, t.TempDir(), &fakeProvider{chunks: tt.chunks})
			s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			resp, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("q")}, rec)
			if (err != nil) != tt.wantErr || resp.StopReason != tt.want {
				t.Fatalf("Prompt = %v, %v; want %q (error %v)", resp, err, tt.want, tt.wantErr)
			}
			if tt.wantErr {
				re, ok := errors.AsType[*acp.RequestError](err)
				if !ok || re.Data.(agent.FailureData).Failure.Code != "EMPTY_RESPONSE" {
					t.Errorf("error = %#v, want EMPTY_RESPONSE facts", err)
				}
				for _, u := range rec.updates {
					// The session's title and Rebound's own status of the wait
					// and the give-up are not the step's.
					if u.SessionUpdate != acp.UpdateSessionInfo && !strings.HasPrefix(u.ToolCallID, "rebound_status_") {
						t.Errorf("a failed step sent a %s update", u.SessionUpdate)
					}
				}
			}
		})
	}
}

// onUpdate is an acp.Client that calls f for every update.
type onUpdate struct {
	acp.Client
	f func(acp.SessionUpdate)
}

func (o onUpdate) Update(_ context.Context, _ string, u acp.SessionUpdate) error {
	o.f(u)
	return nil
}
func (o onUpdate) Capabilities() acp.ClientCapabilities { return acp.ClientCapabilities{} }

// TestAgent_RetryIsOnDiskBeforeTheWait: when the editor hears that a retry
// is scheduled, llm/retry is already in the file, so a crash during the wait
// cannot lose it (the log buffers other appends for up to 100 ms).
func TestAgent_RetryIsOnDiskBeforeTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, APIKeyEnv: "K", Logger: zerolog.Nop(),
			Provider: &failOnce{err: &llm.Error{Status: 503, Message: "busy"}},
			Recovery: recovery.Config{Policy: recovery.Policy{MaxRetries: 1, InitialDelay: 5 * time.Second, MaxDelay: 5 * time.Second,
				Retryable: recovery.DefaultRetryable}}})
		defer a.Close()
		s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		checked := false
		c := onUpdate{f: func(u acp.SessionUpdate) {
			if p, ok := u.Meta[agent.RetryMetaKey].(recovery.RetryProgress); !ok || p.Phase != "scheduled" {
				return
			}
			checked = true
			ld, err := session.Load(session.Path(dir, s.SessionID))
			if err != nil {
				t.Fatalf("load during the wait: %v", err)
			}
			if last := ld.Events[len(ld.Events)-1]; last.Type != session.TypeLLMRetry {
				t.Errorf("during the wait the file ends with %s, want llm/retry", last.Type)
			}
		}}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("hi")}, c); err != nil {
			t.Fatalf("Prompt: %v", err)
		}
		if !checked {
			t.Fatal("no retry was scheduled")
		}
	})
}

// failOnce fails its first request with err, then answers "ok".
type failOnce struct {
	mu   sync.Mutex
	err  error
	done bool
}

func (p *failOnce) Stream(context.Context, llm.Request) (llm.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done {
		p.done = true
		return nil, p.err
	}
	return &fakeStream{chunks: []llm.Chunk{{Content: "ok"}, {FinishReason: "stop"}}}, nil
}

// TestAgent_LiveChunkIsInTheFileBeforeItIsShown: in live mode the editor
// gets a chunk only once its record is written to the file, so a process
// killed right after cannot lose text the user saw (issue #19 item 2).
func TestAgent_LiveChunkIsInTheFileBeforeItIsShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		a := agent.New(agent.Config{StateDir: dir, Model: "m", MaxTokens: 100, APIKeyEnv: "K", Logger: zerolog.Nop(), Live: true,
			Provider: &failOnce{done: true}})
		defer a.Close()
		s, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p"})
		if err != nil {
			t.Fatal(err)
		}
		shown := 0
		c := onUpdate{f: func(u acp.SessionUpdate) {
			if u.SessionUpdate != acp.UpdateAgentMessageChunk {
				return
			}
			shown++
			// What a process that finds this turn left open would commit.
			ld, err := session.Load(session.Path(dir, s.SessionID))
			if err != nil {
				t.Fatalf("load while showing: %v", err)
			}
			journal, _, err := session.ReadShown(session.Path(dir, s.SessionID))
			if err != nil {
				t.Fatalf("read the shown journal while showing: %v", err)
			}
			u2, _ := session.UnfinishedShown(ld.Events, s.SessionID, journal)
			if !strings.Contains(u2.Text, u.Content.Text) {
				t.Errorf("the editor was shown %q, the files have only %q", u.Content.Text, u2.Text)
			}
		}}
		if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: s.SessionID, Prompt: prompt("hi")}, c); err != nil {
			t.Fatalf("Prompt: %v", err)
		}
		if shown == 0 {
			t.Fatal("no chunk was shown live")
		}
	})
}
