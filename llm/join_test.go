package llm_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/llm"
)

// contentDelta and reasoningDelta are the delta JSON of one piece of text.
func contentDelta(s string) string   { return `{"content":` + jsonString(s) + `}` }
func reasoningDelta(s string) string { return `{"reasoning_content":` + jsonString(s) + `}` }

// streamOf starts an attempt whose whole body is already there.
func streamOf(t *testing.T, body string) llm.Stream {
	t.Helper()
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://raw.invalid/v1", APIKey: testKey, HTTPClient: rawDoer{200, body}})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// eventReader hands out an event stream one event per Read, so no two are
// read together and none is joined.
type eventReader struct{ rest string }

func (r *eventReader) Read(p []byte) (int, error) {
	if r.rest == "" {
		return 0, io.EOF
	}
	n := len(r.rest)
	if i := strings.Index(r.rest, "\n\n"); i >= 0 {
		n = i + 2
	}
	n = copy(p, r.rest[:n])
	r.rest = r.rest[n:]
	return n, nil
}

func (r *eventReader) Close() error { return nil }

// streamApart starts an attempt whose body comes one event at a time.
func streamApart(t *testing.T, body string) llm.Stream {
	t.Helper()
	p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://apart.invalid/v1", APIKey: testKey, HTTPClient: pipeDoer{&eventReader{body}}})
	s, err := p.Stream(t.Context(), hello)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recvChunks reads s to its end.
func recvChunks(s llm.Stream) ([]llm.Chunk, error) {
	var out []llm.Chunk
	for {
		c, err := s.Recv()
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}

// Deltas that arrived together come out as one chunk, up to 32 KiB of
// text, in order; a change of kind (reasoning, content, tool calls) starts
// a new chunk.
func TestOpenAI_JoinsDeltasThatArriveTogether(t *testing.T) {
	var deltas []string
	for _, b := range bytesOf("think") {
		deltas = append(deltas, reasoningDelta(b))
	}
	// 80 KiB; 8 KiB under -race, where each delta costs ten times as much
	// and the count of chunks bounded below scales with the text. The
	// 32 KiB cap is TestJoiner_BoundedAndOff's.
	text := strings.Repeat("0123456789abcdef", 5<<10)
	if raceEnabled {
		text = text[:8<<10]
	}
	for _, b := range bytesOf(text) {
		deltas = append(deltas, contentDelta(b))
	}
	deltas = append(deltas, reasoningDelta("again"))
	chunks, err := recvChunks(streamOf(t, sseBody("stop", deltas...)))
	if err != io.EOF {
		t.Fatalf("Recv() = %v, want io.EOF", err)
	}
	var got []llm.Chunk
	var content strings.Builder
	for _, c := range chunks {
		if len(c.Content) > 32<<10 {
			t.Errorf("a chunk of %d bytes, want at most 32 KiB", len(c.Content))
		}
		if c.Content != "" {
			content.WriteString(c.Content)
			continue
		}
		got = append(got, c)
	}
	if content.String() != text {
		t.Errorf("content is %d bytes, not the %d sent in order", content.Len(), len(text))
	}
	// 1-byte deltas: the body is read 16 KiB at a time, so a chunk joins
	// about 16 KiB of events (about 100 deltas here).
	if n := len(chunks) - len(got); n > len(text)/50 {
		t.Errorf("%d content chunks for %d one-byte deltas that arrived together, want at most %d", n, len(text), len(text)/50)
	}
	want := []llm.Chunk{{Reasoning: "think"}, {Reasoning: "again", FinishReason: "stop"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunks other than content (-want +got):\n%s", diff)
	}
}

// Tool call arguments in one-byte deltas are joined per call.
func TestOpenAI_JoinsToolCallDeltas(t *testing.T) {
	args0, args1 := `{"path":"a.txt"}`, `{"cmd":"ls -l"}`
	deltas := []string{`{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"read"}}]}`}
	for _, b := range bytesOf(args0) {
		deltas = append(deltas, `{"tool_calls":[{"index":0,"function":{"arguments":`+jsonString(b)+`}}]}`)
	}
	deltas = append(deltas, `{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"run"}}]}`)
	for _, b := range bytesOf(args1) {
		deltas = append(deltas, `{"tool_calls":[{"index":1,"function":{"arguments":`+jsonString(b)+`}}]}`)
	}
	chunks, err := recvChunks(streamOf(t, sseBody("tool_calls", deltas...)))
	if err != io.EOF {
		t.Fatalf("Recv() = %v, want io.EOF", err)
	}
	want := []llm.Chunk{{ToolCalls: []llm.ToolCallDelta{
		{Index: 0, ID: "call_0", Name: "read", Arguments: args0},
		{Index: 1, ID: "call_1", Name: "run", Arguments: args1},
	}, FinishReason: "tool_calls"}}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

// pipeDoer answers with a 200 event stream read from r.
type pipeDoer struct{ r io.ReadCloser }

func (d pipeDoer) Do(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	h.Set("Content-Type", "text/event-stream")
	return &http.Response{StatusCode: 200, Header: h, Body: d.r, Request: req}, nil
}

// A delta that arrives alone is returned at once: Recv never waits for a
// next event to join, not even after an event that carries nothing (a
// role-only chunk) came with it. In the bubble, waiting would deadlock.
func TestOpenAI_LoneDeltaIsNotHeld(t *testing.T) {
	tests := []struct{ name, first string }{
		{"one event", sseEvents(contentDelta("Hel"))},
		{"then a role-only event", sseEvents(contentDelta("Hel"), `{"role":"assistant"}`)},
		{"then an empty data line", sseEvents(contentDelta("Hel")) + "data:\n\n: ping\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr, pw := io.Pipe()
				p := llm.NewOpenAI(llm.OpenAIConfig{BaseURL: "http://pipe.invalid/v1", APIKey: testKey, HTTPClient: pipeDoer{pr}})
				s, err := p.Stream(t.Context(), hello)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				more := make(chan struct{})
				go func() {
					io.WriteString(pw, tt.first)
					<-more
					io.WriteString(pw, sseBody("stop", contentDelta("lo")))
					pw.Close()
				}()
				if c, err := s.Recv(); err != nil || c.Content != "Hel" {
					t.Fatalf("Recv() = %+v, %v; want the first delta at once", c, err)
				}
				close(more)
				chunks, err := recvChunks(s)
				if err != io.EOF || len(chunks) != 1 || chunks[0].Content != "lo" || chunks[0].FinishReason != "stop" {
					t.Errorf("then %+v, %v; want lo with the finish, io.EOF", chunks, err)
				}
			})
		})
	}
}

// A failure after a burst keeps the burst: its text comes first, then the
// error.
func TestOpenAI_ErrorAfterJoinedDeltas(t *testing.T) {
	var deltas []string
	for _, b := range bytesOf("partial") {
		deltas = append(deltas, contentDelta(b))
	}
	body := sseEvents(deltas...) + `data: {"error":{"message":"overloaded","type":"overloaded_error"}}` + "\n\n"
	chunks, err := recvChunks(streamOf(t, body))
	var e *llm.Error
	if !errors.As(err, &e) || e.Type != "overloaded_error" {
		t.Errorf("Recv() = %v, want the in-stream error", err)
	}
	if diff := cmp.Diff([]llm.Chunk{{Content: "partial"}}, chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}

// A fragment with a name (or an id) is never joined into the one before:
// it may start a new call (Gemini sends neither index nor id).
func TestOpenAI_JoinKeepsCallsApart(t *testing.T) {
	deltas := []string{
		`{"tool_calls":[{"type":"function","function":{"name":"find","arguments":"{\"q\":1}"}}]}`,
		`{"tool_calls":[{"type":"function","function":{"name":"read","arguments":"{}"}}]}`,
		`{"tool_calls":[{"index":0,"type":"function","function":{"name":"run","arguments":"{}"}}]}`,
		`{"tool_calls":[{"index":0,"type":"function","function":{"name":"edit"}}]}`,
		`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`,
	}
	_, got, err := drain(t, streamOf(t, sseBody("tool_calls", deltas...)))
	if err != io.EOF {
		t.Fatalf("Recv() = %v, want io.EOF", err)
	}
	want := []llm.ToolCall{{Name: "find", Arguments: `{"q":1}`}, {Name: "read", Arguments: "{}"}, {Name: "run", Arguments: "{}"}, {Name: "edit", Arguments: "{}"}}
	if diff := cmp.Diff(want, got.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
}
