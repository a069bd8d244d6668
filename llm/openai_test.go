package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	openai "github.com/sashabaranov/go-openai"

	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

const testKey = "sk-test-SECRET-0123456789"

func ptr[T any](v T) *T { return &v }

func newMock(t *testing.T, steps ...mockprovider.Step) (*llm.OpenAI, *mockprovider.Mock) {
	t.Helper()
	script := &mockprovider.Script{Steps: steps}
	if err := script.Validate(); err != nil {
		t.Fatal(err)
	}
	m := mockprovider.New(script)
	return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: m, StreamUsage: llm.StreamUsageOn}), m
}

var hello = llm.Request{
	Model:     "mock-model",
	MaxTokens: 256,
	Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "Be brief."},
		{Role: llm.RoleUser, Content: "Hi"},
	},
}

// drain reads a stream to its end and returns the delta chunks, the
// accumulated reply and the final error (io.EOF when it finished properly).
func drain(t *testing.T, s llm.Stream) ([]llm.Chunk, llm.Reply, error) {
	t.Helper()
	var chunks []llm.Chunk
	var r llm.Reply
	for range 1000 {
		c, err := s.Recv()
		if err != nil {
			return chunks, r, err
		}
		if c.HasDelta() {
			chunks = append(chunks, c)
		}
		if err := r.Add(c); err != nil {
			return chunks, r, err
		}
	}
	t.Fatal("stream never ended")
	return nil, r, nil
}

func TestOpenAI_StreamReplies(t *testing.T) {
	tests := []struct {
		name       string
		step       mockprovider.Step
		want       llm.Reply
		wantChunks []llm.Chunk
	}{
		{
			name: "text in three chunks",
			step: mockprovider.Step{Text: "Hello, world!", Chunks: 3},
			want: llm.Reply{Content: "Hello, world!", FinishReason: llm.FinishStop, Deltas: 3},
			wantChunks: []llm.Chunk{
				{Content: "Hell"}, {Content: "o, w"}, {Content: "orld!"},
			},
		},
		{
			name:       "reasoning before text",
			step:       mockprovider.Step{Reasoning: "Think first.", Text: "Done."},
			want:       llm.Reply{Reasoning: "Think first.", Content: "Done.", FinishReason: llm.FinishStop, Deltas: 2},
			wantChunks: []llm.Chunk{{Reasoning: "Think first."}, {Content: "Done."}},
		},
		{
			name: "reasoning and text in two chunks each",
			step: mockprovider.Step{Reasoning: "abcd", Text: "wxyz", Chunks: 2},
			want: llm.Reply{Reasoning: "abcd", Content: "wxyz", FinishReason: llm.FinishStop, Deltas: 4},
			wantChunks: []llm.Chunk{
				{Reasoning: "ab"}, {Reasoning: "cd"}, {Content: "wx"}, {Content: "yz"},
			},
		},
		{
			name:       "finish length",
			step:       mockprovider.Step{Text: "trunc", FinishReason: "length"},
			want:       llm.Reply{Content: "trunc", FinishReason: llm.FinishLength, Deltas: 1},
			wantChunks: []llm.Chunk{{Content: "trunc"}},
		},
		{
			name: "empty",
			step: mockprovider.Step{Empty: true},
			want: llm.Reply{FinishReason: llm.FinishStop},
		},
		{
			name:       "echo",
			step:       mockprovider.Step{Echo: true},
			want:       llm.Reply{Content: "You said: Hi", FinishReason: llm.FinishStop, Deltas: 1},
			wantChunks: []llm.Chunk{{Content: "You said: Hi"}},
		},
		{
			name: "tool calls",
			step: mockprovider.Step{Text: "Reading.", ToolCalls: []mockprovider.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
			want: llm.Reply{
				Content:      "Reading.",
				ToolCalls:    []llm.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
				FinishReason: llm.FinishToolCalls,
				Deltas:       2,
			},
			wantChunks: []llm.Chunk{
				{Content: "Reading."},
				{ToolCalls: []llm.ToolCallDelta{{Index: 0, ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, m := newMock(t, tt.step)
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatalf("Stream() = %v", err)
			}
			defer s.Close()
			chunks, got, err := drain(t, s)
			if err != io.EOF {
				t.Fatalf("Recv() final error = %v, want io.EOF", err)
			}
			if got.Usage == nil {
				t.Error("no usage: the adapter asks for include_usage and the mock sends it")
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(llm.Reply{}, "Usage"), cmpopts.IgnoreUnexported(llm.Reply{})); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantChunks, chunks); diff != "" {
				t.Errorf("delta chunks (-want +got):\n%s", diff)
			}
			if _, err := s.Recv(); err != io.EOF {
				t.Errorf("Recv() after the end = %v, want io.EOF again", err)
			}
			if n := m.Count(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

func TestOpenAI_RequestMapping(t *testing.T) {
	p, m := newMock(t, mockprovider.Step{Text: "ok"}, mockprovider.Step{Text: "ok"})
	req := llm.Request{
		Model:     "deepseek-reasoner",
		MaxTokens: 100,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys"},
			{Role: llm.RoleUser, Content: "read a.txt"},
			{Role: llm.RoleAssistant, Content: "", Reasoning: "private thoughts", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "read", Arguments: `{"p":"a.txt"}`}}},
			{Role: llm.RoleTool, Content: "contents", ToolCallID: "c1"},
		},
	}
	for _, model := range []string{"deepseek-reasoner", "gpt-5-mini"} {
		req.Model = model
		s, err := p.Stream(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, s); err != io.EOF {
			t.Fatal(err)
		}
	}
	type sent struct {
		Model        string
		MaxTokens    int
		Stream       bool
		IncludeUsage bool
		Messages     []mockprovider.Message
		Auth         bool
		AuthHeader   string
	}
	var got []sent
	for _, r := range m.Requests() {
		got = append(got, sent{r.Model, r.MaxTokens, r.Stream, r.IncludeUsage, r.Messages, r.Auth, r.Header.Get("Authorization")})
	}
	msgs := []mockprovider.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "read a.txt"},
		{Role: "assistant", ToolCalls: []mockprovider.ToolCall{{ID: "c1", Name: "read", Arguments: `{"p":"a.txt"}`}}},
		{Role: "tool", Content: "contents", ToolCallID: "c1"},
	}
	// gpt-5 models take max_completion_tokens (go-openai refuses max_tokens
	// for them); the mock records either as MaxTokens.
	want := []sent{
		{"deepseek-reasoner", 100, true, true, msgs, true, ""},
		{"gpt-5-mini", 100, true, true, msgs, true, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests as the provider saw them (-want +got):\n%s", diff)
	}
}

// errFacts is the comparable part of an *llm.Error.
type errFacts struct {
	Status                                  int
	Code, Type, Param, Message, RequestID   string
	InStream                                bool
	RetryAfter, RetryAfterMs, ContentPrefix string
}

func factsOf(t *testing.T, err error) errFacts {
	t.Helper()
	e, ok := errors.AsType[*llm.Error](err)
	if !ok {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	return errFacts{
		Status: e.Status, Code: e.Code, Type: e.Type, Param: e.Param, Message: e.Message,
		RequestID: e.RequestID, InStream: e.InStream,
		RetryAfter: e.Header.Get("Retry-After"), RetryAfterMs: e.Header.Get("Retry-After-Ms"),
	}
}

func TestOpenAI_HTTPErrors(t *testing.T) {
	tests := []struct {
		name string
		step mockprovider.Step
		want errFacts
	}{
		{
			name: "429 with Retry-After and request id",
			step: mockprovider.Step{Status: 429, Headers: map[string]string{"Retry-After": "2", "retry-after-ms": "1500", "x-request-id": "req_abc"}},
			want: errFacts{Status: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached (mock provider). Please try again later.",
				RequestID: "req_abc", RetryAfter: "2", RetryAfterMs: "1500"},
		},
		{
			name: "nested error with param",
			step: mockprovider.Step{Status: 400, Body: []byte(`{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)},
			want: errFacts{Status: 400, Code: "context_length_exceeded", Type: "invalid_request_error", Param: "messages", Message: "too long", RequestID: "mock-req-1"},
		},
		{
			name: "flat error with numeric code",
			step: mockprovider.Step{Status: 400, Body: []byte(`{"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400}`)},
			want: errFacts{Status: 400, Code: "400", Type: "BadRequestError", Message: "bad", RequestID: "mock-req-1"},
		},
		{
			name: "nested error with numeric code and no type",
			step: mockprovider.Step{Status: 429, Body: []byte(`{"error":{"message":"slow down","code":429}}`)},
			want: errFacts{Status: 429, Code: "429", Message: "slow down", RequestID: "mock-req-1"},
		},
		{
			name: "Anthropic-style overloaded 529",
			step: mockprovider.Step{Status: 529},
			want: errFacts{Status: 529, Type: "overloaded_error", Message: "Overloaded", RequestID: "mock-req-1"},
		},
		{
			name: "Gemini-style array with status",
			step: mockprovider.Step{Status: 429, Body: []byte(`[{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED"}}]`)},
			want: errFacts{Status: 429, Code: "429", Type: "RESOURCE_EXHAUSTED", Message: "quota", RequestID: "mock-req-1"},
		},
		{
			name: "500 without code",
			step: mockprovider.Step{Status: 500},
			want: errFacts{Status: 500, Type: "server_error", Message: "The server had an error while processing your request (mock provider).", RequestID: "mock-req-1"},
		},
		{
			name: "HTML from a proxy",
			step: mockprovider.Step{Status: 502, Body: []byte(`"<html>\n<body>502 Bad Gateway</body>\n</html>"`)},
			want: errFacts{Status: 502, Message: "mock.invalid answered with a web page instead of the API's error", RequestID: "mock-req-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, m := newMock(t, tt.step)
			s, err := p.Stream(t.Context(), hello)
			if err == nil {
				s.Close()
				t.Fatal("Stream() succeeded, want an error")
			}
			if diff := cmp.Diff(tt.want, factsOf(t, err)); diff != "" {
				t.Errorf("error facts (-want +got):\n%s", diff)
			}
			if e, _ := errors.AsType[*llm.Error](err); len(e.Body) == 0 || e.Err == nil {
				t.Errorf("Body = %q, Err = %v: want the raw body and go-openai's error kept", e.Body, e.Err)
			}
			if n := m.Count(); n != 1 {
				t.Errorf("requests = %d, want 1", n)
			}
		})
	}
}

func TestOpenAI_InStreamError(t *testing.T) {
	tests := []struct {
		name  string
		event string
		want  errFacts
	}{
		{
			name:  "OpenAI shape",
			event: `{"message":"upstream failed","type":"server_error","code":"internal_error"}`,
			want:  errFacts{Status: 200, InStream: true, Code: "internal_error", Type: "server_error", Message: "upstream failed", RequestID: "mock-req-1"},
		},
		{
			// go-openai cannot parse this one (no "message"); the adapter
			// reads the event verbatim. The code is an HTTP status: the
			// error's status.
			name:  "numeric code without message",
			event: `{"code":503,"type":"overloaded_error"}`,
			want:  errFacts{Status: 503, InStream: true, Code: "503", Type: "overloaded_error", RequestID: "mock-req-1"},
		},
		{
			name:  "bare string",
			event: `"stream interrupted"`,
			want:  errFacts{Status: 200, InStream: true, Message: "stream interrupted", RequestID: "mock-req-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := newMock(t, mockprovider.Step{Text: "abcd", Chunks: 2, StreamError: []byte(tt.event)})
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chunks, _, err := drain(t, s)
			if diff := cmp.Diff([]llm.Chunk{{Content: "ab"}, {Content: "cd"}}, chunks); diff != "" {
				t.Errorf("chunks before the error (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, factsOf(t, err)); diff != "" {
				t.Errorf("error facts (-want +got):\n%s", diff)
			}
			if errors.Is(err, io.EOF) {
				t.Error("an in-stream error must not look like io.EOF")
			}
		})
	}
}

func TestOpenAI_DropAfter(t *testing.T) {
	p, m := newMock(t, mockprovider.Step{Text: "abcdef", Chunks: 3, DropAfter: ptr(2)})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks, _, err := drain(t, s)
	if diff := cmp.Diff([]llm.Chunk{{Content: "ab"}, {Content: "cd"}}, chunks); diff != "" {
		t.Errorf("partial chunks (-want +got):\n%s", diff)
	}
	if !errors.Is(err, llm.ErrIncompleteStream) || !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		t.Errorf("Recv() = %v, want ErrIncompleteStream and io.ErrUnexpectedEOF, not io.EOF", err)
	}
	if _, ok := errors.AsType[*llm.Error](err); ok {
		t.Errorf("Recv() = %v: a dropped stream is a transport failure, not a provider *Error", err)
	}
	if _, err2 := s.Recv(); err2 != err {
		t.Errorf("Recv() again = %v, want the same error", err2)
	}
	if n := m.Count(); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

// rawDoer answers every request with a fixed body, for shapes the mock
// does not produce.
type rawDoer struct {
	status int
	body   string
}

func (d rawDoer) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	h.Set("Request-Id", "req_raw")
	return &http.Response{StatusCode: d.status, Header: h, Body: io.NopCloser(strings.NewReader(d.body)), Request: req}, nil
}

func TestOpenAI_RawBodies(t *testing.T) {
	const chunk = `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}` + "\n\n"
	const finish = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	tests := []struct {
		name       string
		body       string
		wantReply  llm.Reply
		wantErr    error // matched with errors.Is; nil: see wantFacts
		wantFacts  *errFacts
		wantReason string
	}{
		{
			name:      "keep-alive comments and event lines are ignored",
			body:      ": ping\n\nevent: message\n" + chunk + ": ping\n\n" + finish + "data: [DONE]\n\n",
			wantReply: llm.Reply{Content: "hi", FinishReason: "stop", Deltas: 1},
			wantErr:   io.EOF,
		},
		{
			name:      "error null in an ordinary chunk",
			body:      `data: {"error":null,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n",
			wantReply: llm.Reply{Content: "hi", FinishReason: "stop", Deltas: 1},
			wantErr:   io.EOF,
		},
		{
			name:      "finish without [DONE]",
			body:      chunk + finish,
			wantReply: llm.Reply{Content: "hi", FinishReason: "stop", Deltas: 1},
			wantErr:   io.EOF,
		},
		{
			name:       "[DONE] without a finish reason",
			body:       chunk + "data: [DONE]\n\n",
			wantReply:  llm.Reply{Content: "hi", Deltas: 1},
			wantErr:    llm.ErrIncompleteStream,
			wantReason: "[DONE] arrived but no chunk carried a finish reason",
		},
		{
			name:      "Anthropic-style error event",
			body:      chunk + "event: error\n" + `data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` + "\n\n",
			wantReply: llm.Reply{Content: "hi", Deltas: 1},
			wantFacts: &errFacts{Status: 200, InStream: true, Type: "overloaded_error", Message: "Overloaded", RequestID: "req_raw"},
		},
		{
			name:      "JSON error body with status 200",
			body:      `{"error":{"message":"quota","type":"insufficient_quota","code":"insufficient_quota"}}`,
			wantFacts: &errFacts{Status: 200, InStream: true, Code: "insufficient_quota", Type: "insufficient_quota", Message: "quota", RequestID: "req_raw"},
		},
		{
			name:    "HTML with status 200",
			body:    "<html>\n<body>maintenance</body>\n</html>\n",
			wantErr: llm.ErrMalformedStream,
		},
		{
			name:      "undecodable chunk",
			body:      chunk + "data: {not json}\n\n",
			wantReply: llm.Reply{Content: "hi", Deltas: 1},
			wantErr:   llm.ErrMalformedStream,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, tt.body}})
			s, err := p.Stream(t.Context(), hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, got, err := drain(t, s)
			if diff := cmp.Diff(tt.wantReply, got, cmpopts.IgnoreUnexported(llm.Reply{})); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if tt.wantFacts != nil {
				if diff := cmp.Diff(*tt.wantFacts, factsOf(t, err)); diff != "" {
					t.Errorf("error facts (-want +got):\n%s", diff)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Recv() = %v, want %v", err, tt.wantErr)
			}
			if tt.wantReason != "" && !strings.Contains(err.Error(), tt.wantReason) {
				t.Errorf("Recv() = %q, want it to say %q", err, tt.wantReason)
			}
		})
	}
}

// A base URL that answers with a web page (a provider's website, a proxy's
// sign-in page) is named for what it is, by host, with what to check; the
// page's markup is not the message. Over real HTTP, since what matters is
// the Content-Type and body a server sends.
func TestOpenAI_WebPageInsteadOfTheAPI(t *testing.T) {
	const site = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><meta charset=\"utf-8\"><title>Example &amp; Co \u2014 Home</title></head>\n<body><h1>Welcome</h1><script>var x = 1;</script></body></html>\n"
	const notFound = "<html><head><title>404 Not Found</title></head><body><center><h1>404 Not Found</h1></center><hr><center>nginx</center></body></html>\n"
	mux := http.NewServeMux()
	mux.HandleFunc("/site/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, site)
	})
	mux.HandleFunc("/missing/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, notFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	wantSaid := func(t *testing.T, err error, title string) {
		t.Helper()
		msg := err.Error()
		for _, want := range []string{host + " answered with a web page", title, "not the API", "check the base URL", "provider.base_url", "OPENAI_BASE_URL", "--base-url"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not say %q", msg, want)
			}
		}
		for _, markup := range []string{"<html", "<h1", "<script", "&amp;"} {
			if strings.Contains(msg, markup) {
				t.Errorf("error %q quotes the page (%q)", msg, markup)
			}
		}
	}

	t.Run("200 text/html", func(t *testing.T) {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/site", APIKey: testKey})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, _, err = drain(t, s)
		if !errors.Is(err, llm.ErrMalformedStream) {
			t.Fatalf("Recv() = %v, want ErrMalformedStream", err)
		}
		wantSaid(t, err, "\"Example & Co \u2014 Home\"")
	})
	t.Run("404 HTML page", func(t *testing.T) {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.URL + "/missing", APIKey: testKey})
		s, err := p.Stream(t.Context(), hello)
		if err == nil {
			s.Close()
			t.Fatal("Stream() succeeded, want an error")
		}
		f := factsOf(t, err)
		if f.Status != http.StatusNotFound {
			t.Errorf("status %d, want 404", f.Status)
		}
		wantSaid(t, err, `"404 Not Found"`)
		if e, _ := errors.AsType[*llm.Error](err); string(e.Body) != notFound {
			t.Errorf("Body = %q, want the page kept as it came", e.Body)
		}
	})
}

// A stalled stream holds Recv until the caller's context ends; the mock's
// stall is a channel wait, so inside the bubble the test sees Recv durably
// blocked, cancels, and gets context.Canceled with no fake time passing.
func TestOpenAI_StallThenCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newMock(t, mockprovider.Step{Text: "abcd", Chunks: 2, StallAfter: ptr(1)})
		ctx, cancel := context.WithCancel(t.Context())
		s, err := p.Stream(ctx, hello)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if c, err := s.Recv(); err != nil || c.Content != "ab" {
			t.Fatalf("Recv() = %+v, %v; want the first chunk", c, err)
		}
		start := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			done <- err
		}()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Recv() returned %v during the stall", err)
		default:
		}
		cancel()
		err = <-done
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Recv() = %v, want context.Canceled", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("Recv() returned after %v, want at once", d)
		}
	})
}

func TestOpenAI_CloseUnblocksRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newMock(t, mockprovider.Step{Text: "abcd", StallAfter: ptr(0)})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := s.Recv()
			done <- err
		}()
		time.Sleep(time.Minute) // fake time: the stall holds as long as we like
		synctest.Wait()
		s.Close()
		err = <-done
		if !errors.Is(err, llm.ErrStreamClosed) {
			t.Errorf("Recv() = %v, want ErrStreamClosed", err)
		}
		if errors.Is(err, context.Canceled) {
			t.Errorf("Recv() = %v: Close is not the user cancelling, it must not match context.Canceled", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("second Close() = %v", err)
		}
	})
}

func TestOpenAI_ChunkDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newMock(t, mockprovider.Step{Text: "abc", Chunks: 3, ChunkDelay: "100ms"})
		start := time.Now()
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var at []time.Duration
		for {
			c, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.HasDelta() || c.FinishReason != "" {
				at = append(at, time.Since(start))
			}
		}
		want := []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("chunk arrival times (-want +got):\n%s", diff)
		}
	})
}

// One logical attempt is exactly one HTTP request: go-openai must not retry
// and neither may the adapter, whatever the outcome.
func TestOpenAI_OneRequestPerAttempt(t *testing.T) {
	tests := []struct {
		name string
		step mockprovider.Step
	}{
		{"success", mockprovider.Step{Text: "ok"}},
		{"429", mockprovider.Step{Status: 429, Headers: map[string]string{"Retry-After": "1"}}},
		{"500", mockprovider.Step{Status: 500}},
		{"dropped stream", mockprovider.Step{Text: "abc", Chunks: 3, DropAfter: ptr(1)}},
		{"in-stream error", mockprovider.Step{Text: "abc", StreamError: []byte(`{"message":"x"}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Extra steps would answer a retry with success, hiding it.
			p, m := newMock(t, tt.step, mockprovider.Step{Text: "retried"}, mockprovider.Step{Text: "retried"})
			if s, err := p.Stream(t.Context(), hello); err == nil {
				drain(t, s)
				s.Close()
			}
			if n := m.Count(); n != 1 {
				t.Errorf("HTTP requests = %d, want 1", n)
			}
		})
	}
}

func TestOpenAI_TransportErrors(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://" + addr + "/v1", APIKey: testKey})
		_, err = p.Stream(t.Context(), hello)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("Stream() = %v, want ECONNREFUSED", err)
		}
		if _, ok := errors.AsType[*net.OpError](err); !ok {
			t.Errorf("Stream() = %v, want a *net.OpError inside", err)
		}
		if _, ok := errors.AsType[*llm.Error](err); ok {
			t.Errorf("Stream() = %v: no HTTP answer, so no *llm.Error", err)
		}
	})
	t.Run("context already cancelled", func(t *testing.T) {
		p, m := newMock(t, mockprovider.Step{Text: "ok"})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := p.Stream(ctx, hello)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Stream() = %v, want context.Canceled", err)
		}
		if n := m.Count(); n != 0 {
			t.Errorf("requests = %d, want 0", n)
		}
	})
	t.Run("cancel cause is kept", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p, _ := newMock(t, mockprovider.Step{StallAfter: ptr(0)})
			errTurnCancelled := errors.New("session/cancel")
			ctx, cancel := context.WithCancelCause(t.Context())
			s, err := p.Stream(ctx, hello)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cancel(errTurnCancelled)
			_, err = s.Recv()
			if !errors.Is(err, errTurnCancelled) || !errors.Is(err, context.Canceled) {
				t.Errorf("Recv() = %v, want the cause and context.Canceled", err)
			}
		})
	})
}

// keyLeaks lists every place in err's chain where key still shows: error
// texts, the fields of *llm.Error (headers and raw body included), request
// ids, and go-openai's own error types.
func keyLeaks(err error, key string) []string {
	var leaks []string
	check := func(where, s string) {
		if strings.Contains(s, key) {
			leaks = append(leaks, fmt.Sprintf("%s: %q", where, s))
		}
	}
	var walk func(e error)
	walk = func(e error) {
		for ; e != nil; e = errors.Unwrap(e) {
			check(fmt.Sprintf("%T text", e), e.Error())
			switch e := e.(type) {
			case *llm.Error:
				check("Message", e.Message)
				check("Code", e.Code)
				check("Type", e.Type)
				check("Param", e.Param)
				check("RequestID", e.RequestID)
				check("Body", string(e.Body))
				for k, vs := range e.Header {
					check("header name", k)
					for _, v := range vs {
						check("header "+k, v)
					}
				}
			case *llm.RequestIDError:
				check("RequestID", e.RequestID)
			case *openai.APIError:
				check("APIError", fmt.Sprintf("%v %s %v %s", e.Code, e.Type, e.Param, e.HTTPStatus))
			case *openai.RequestError:
				check("RequestError body", string(e.Body))
			}
			if j, ok := e.(interface{ Unwrap() []error }); ok {
				for _, inner := range j.Unwrap() {
					walk(inner)
				}
				return
			}
		}
	}
	walk(err)
	return leaks
}

// The key never shows in a failure, whatever the provider echoes back and
// wherever: the message, the error's code, type and param, the request id,
// any header (Retry-After included), the raw body, even cut mid-key.
func TestOpenAI_KeyNotInErrors(t *testing.T) {
	echo := `{"error":{"message":"Incorrect API key provided: ` + testKey + `","type":"invalid_request_error","code":"invalid_api_key"}}`
	inFields := `{"error":{"message":"bad key","type":"` + testKey + `","code":"` + testKey + `","param":"` + testKey + `"}}`
	cut := strings.Repeat("x", 64<<10-10) + testKey // the capture ends 10 bytes into the key
	cutBody, _ := json.Marshal(cut)
	tests := []struct {
		name string
		step mockprovider.Step
	}{
		{"401 echoing the key", mockprovider.Step{Status: 401, Body: []byte(echo)}},
		{"401 default", mockprovider.Step{Status: 401}},
		{"key as error code, type and param", mockprovider.Step{Status: 400, Body: []byte(inFields)}},
		{"key as request id and Retry-After", mockprovider.Step{Status: 429, Headers: map[string]string{
			"X-Request-Id": testKey, "Retry-After": testKey, "Retry-After-Ms": "1" + testKey, "X-Echo": "Bearer " + testKey}}},
		{"HTML echoing the key", mockprovider.Step{Status: 502, Body: []byte(`"bad gateway for key ` + testKey + `"`)}},
		{"HTML cut in the middle of the key", mockprovider.Step{Status: 502, Body: cutBody}},
		{"in-stream error echoing the key", mockprovider.Step{Text: "a", StreamError: []byte(`{"message":"key ` + testKey + ` revoked"}`)}},
		{"in-stream error with the key in its fields", mockprovider.Step{Text: "a", StreamError: []byte(
			`{"message":"no","code":"` + testKey + `","type":"` + testKey + `","request_id":"` + testKey + `"}`)}},
		{"dropped stream with the key as request id", mockprovider.Step{Text: "a", DropAfter: ptr(0), Headers: map[string]string{"X-Request-Id": testKey}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, m := newMock(t, tt.step)
			var log strings.Builder
			m.SetLog(&log)
			s, err := p.Stream(t.Context(), hello)
			if err == nil {
				_, _, err = drain(t, s)
				s.Close()
			}
			if err == nil || err == io.EOF {
				t.Fatalf("got %v, want a failure", err)
			}
			for _, leak := range keyLeaks(err, testKey) {
				t.Errorf("the API key shows in %s", leak)
			}
			for _, leak := range keyLeaks(err, testKey[:10]) {
				t.Errorf("the start of the API key shows in %s", leak)
			}
			if strings.Contains(log.String(), testKey) {
				t.Errorf("mock request log contains the API key:\n%s", log.String())
			}
		})
	}
	t.Run("non-SSE body with status 200", func(t *testing.T) {
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, "<html><title>key " + testKey + "</title>key " + testKey + "</html>\n"}})
		s, err := p.Stream(t.Context(), hello)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		_, _, err = drain(t, s)
		if !errors.Is(err, llm.ErrMalformedStream) {
			t.Fatalf("Recv() = %v, want ErrMalformedStream", err)
		}
		for _, leak := range keyLeaks(err, testKey) {
			t.Errorf("the API key shows in %s", leak)
		}
	})
}

// A key too short to be a secret ("x", "EMPTY": local servers take any) is
// not redacted: replacing it everywhere would garble every error.
func TestOpenAI_ShortKeyIsNotRedacted(t *testing.T) {
	const msg = "This model's maximum context length is 8192 tokens. Please reduce the length of the messages. EMPTY"
	body := `{"error":{"message":"` + msg + `","type":"invalid_request_error","code":"context_length_exceeded"}}`
	for _, key := range []string{"x", "EMPTY", "sk-1234"} {
		t.Run(key, func(t *testing.T) {
			m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Status: 400, Body: []byte(body)}}})
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: key, HTTPClient: m})
			_, err := p.Stream(t.Context(), hello)
			e, ok := errors.AsType[*llm.Error](err)
			if !ok {
				t.Fatalf("Stream() = %v, want an *llm.Error", err)
			}
			if e.Message != msg || e.Code != "context_length_exceeded" || e.Type != "invalid_request_error" {
				t.Errorf("facts = %q, %q, %q; want them as the provider sent them", e.Message, e.Code, e.Type)
			}
			if strings.Contains(err.Error(), "[redacted]") {
				t.Errorf("Stream() = %q: a short key is no secret and must not garble the text", err)
			}
		})
	}
	t.Run("eight characters are redacted", func(t *testing.T) {
		const key = "sk-12345"
		m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Status: 401, Body: []byte(`{"error":{"message":"bad key ` + key + `"}}`)}}})
		p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: key, HTTPClient: m})
		_, err := p.Stream(t.Context(), hello)
		if e, ok := errors.AsType[*llm.Error](err); !ok || e.Message != "bad key [redacted]" {
			t.Errorf("Stream() = %v, want the message with the key redacted", err)
		}
	})
}

// End to end over loopback HTTP with the default *http.Client: the same
// adapter behaviour as in memory.
func TestOpenAI_OverLoopback(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{Reasoning: "hmm", Text: "Hello there", Chunks: 2},
		{Text: "abc", Chunks: 3, DropAfter: ptr(1)},
		{Status: 429, Headers: map[string]string{"Retry-After": "3"}},
		{Text: "x", StallAfter: ptr(1)},
	}})
	srv, err := mockprovider.Serve(t.Context(), "127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: srv.BaseURL(), APIKey: testKey})

	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := drain(t, s)
	s.Close()
	// Deltas is not compared: those that arrive together are joined, and
	// over a socket that depends on timing.
	want := llm.Reply{Reasoning: "hmm", Content: "Hello there", FinishReason: "stop"}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(llm.Reply{}, "Usage", "Deltas"), cmpopts.IgnoreUnexported(llm.Reply{})); diff != "" || err != io.EOF {
		t.Errorf("reply (-want +got):\n%s\nerr = %v", diff, err)
	}

	s, err = p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = drain(t, s); !errors.Is(err, llm.ErrIncompleteStream) {
		t.Errorf("dropped stream: Recv() = %v, want ErrIncompleteStream", err)
	}
	s.Close()

	_, err = p.Stream(t.Context(), hello)
	if diff := cmp.Diff(errFacts{Status: 429, Code: "rate_limit_exceeded", Type: "requests", Message: "Rate limit reached (mock provider). Please try again later.",
		RequestID: "mock-req-3", RetryAfter: "3"}, factsOf(t, err)); diff != "" {
		t.Errorf("429 facts (-want +got):\n%s", diff)
	}

	s, err = p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Recv(); err != nil || c.Content != "x" {
		t.Fatalf("Recv() = %+v, %v", c, err)
	}
	s.Close() // the server is stalled; Close must abort the HTTP request
	if _, err := s.Recv(); !errors.Is(err, llm.ErrStreamClosed) {
		t.Errorf("Recv() after Close = %v, want ErrStreamClosed", err)
	}
	if n := m.Count(); n != 4 {
		t.Errorf("requests = %d, want 4", n)
	}
}

// closeTracker wraps a doer and records whether each response body was
// closed, to show the adapter releases the request on every terminal path
// even when the caller never calls Close.
type closeTracker struct {
	next   llm.HTTPDoer
	bodies []*trackedBody
}

type trackedBody struct {
	io.ReadCloser
	closed bool
}

func (b *trackedBody) Close() error { b.closed = true; return b.ReadCloser.Close() }

func (c *closeTracker) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.next.Do(req)
	if err == nil {
		b := &trackedBody{ReadCloser: resp.Body}
		c.bodies = append(c.bodies, b)
		resp.Body = b
	}
	return resp, err
}

func TestOpenAI_BodyClosedOnEveryEnd(t *testing.T) {
	tests := []struct {
		name string
		doer func() llm.HTTPDoer
	}{
		{"finished", func() llm.HTTPDoer {
			return mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "ok"}}})
		}},
		{"HTTP 429", func() llm.HTTPDoer {
			return mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Status: 429}}})
		}},
		{"dropped", func() llm.HTTPDoer {
			return mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "ok", DropAfter: ptr(1)}}})
		}},
		{"in-stream error", func() llm.HTTPDoer {
			return mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "ok", StreamError: []byte(`{"message":"x"}`)}}})
		}},
		{"malformed", func() llm.HTTPDoer { return rawDoer{200, "data: {oops}\n\n"} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := &closeTracker{next: tt.doer()}
			p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://mock.invalid/v1", APIKey: testKey, HTTPClient: tr})
			if s, err := p.Stream(t.Context(), hello); err == nil {
				drain(t, s) // and deliberately no Close
			}
			if len(tr.bodies) != 1 || !tr.bodies[0].closed {
				t.Errorf("bodies = %d, closed = %v; want the one body closed", len(tr.bodies), len(tr.bodies) == 1 && tr.bodies[0].closed)
			}
		})
	}
}

// Close in the middle of a reply aborts the request. The context here is
// never cancelled, so if Close did not abort it, the mock's writer would
// stay blocked and synctest.Test would fail with a deadlock.
func TestOpenAI_CloseMidStreamReleasesRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := newMock(t, mockprovider.Step{Text: "abcdef", Chunks: 3})
		s, err := p.Stream(context.Background(), hello)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := s.Recv(); err != nil || c.Content != "ab" {
			t.Fatalf("Recv() = %+v, %v", c, err)
		}
		s.Close()
		if _, err := s.Recv(); !errors.Is(err, llm.ErrStreamClosed) {
			t.Errorf("Recv() after Close = %v, want ErrStreamClosed", err)
		}
	})
}

func TestReply_AddBoundsToolCallIndex(t *testing.T) {
	for _, idx := range []int{-1, llm.MaxToolCalls, 1_000_000_000} {
		var r llm.Reply
		err := r.Add(llm.Chunk{ToolCalls: []llm.ToolCallDelta{{Index: idx, ID: "x", Name: "f"}}})
		if !errors.Is(err, llm.ErrMalformedStream) || len(r.ToolCalls) != 0 {
			t.Errorf("index %d: err = %v, %d calls; want ErrMalformedStream and none", idx, err, len(r.ToolCalls))
		}
	}
}

// TestReply_AddIsLinear: a reply built from many small deltas keeps every
// byte in order (the builders are views, not copies made per delta).
func TestReply_AddManyDeltas(t *testing.T) {
	var r llm.Reply
	var want strings.Builder
	for i := range 20000 {
		d := string(rune('a' + i%26))
		want.WriteString(d)
		if err := r.Add(llm.Chunk{Content: d, Reasoning: d, ToolCalls: []llm.ToolCallDelta{{Index: 1, Arguments: d}}}); err != nil {
			t.Fatal(err)
		}
	}
	if r.Content != want.String() || r.Reasoning != want.String() || len(r.ToolCalls) != 1 || r.ToolCalls[0].Arguments != want.String() {
		t.Errorf("accumulated text differs from the deltas")
	}
	if r.Deltas != 20000 {
		t.Errorf("Deltas = %d", r.Deltas)
	}
}

func BenchmarkReply_Add16kChunks(b *testing.B) {
	c := llm.Chunk{Content: "0123456789"}
	for b.Loop() {
		var r llm.Reply
		for range 16384 {
			r.Add(c)
		}
	}
}

// BenchmarkReply_ConcatBaseline16kChunks is the baseline for the one above:
// the string += that Reply.Add used to do, in the same run.
func BenchmarkReply_ConcatBaseline16kChunks(b *testing.B) {
	c := llm.Chunk{Content: "0123456789"}
	for b.Loop() {
		var s string
		for range 16384 {
			s += c.Content
		}
		_ = s
	}
}
