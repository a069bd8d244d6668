package mockprovider_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

func ptr[T any](v T) *T { return &v }

const chatBody = `{"model":"m1","messages":[{"role":"system","content":"sys"},{"role":"user","content":"Hello"}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}`

// do sends one request through m.Do and returns status, headers and body.
func do(t *testing.T, ctx context.Context, m *mockprovider.Mock, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, "http://mock.invalid"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-secret")
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.Do(req)
	if err != nil {
		t.Fatalf("Do() = %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, b
}

func TestParseScript_Valid(t *testing.T) {
	got, err := mockprovider.ParseScript([]byte(`{
		"steps": [
			{"status": 429, "headers": {"Retry-After": "2"}},
			{"reasoning": "hm", "text": "Hello", "chunks": 3, "chunk_delay": "100ms"},
			{"text": "abc", "drop_after": 1},
			{"stall_after": 0},
			{"text": "x", "stream_error": {"message": "boom", "code": 500}},
			{"empty": true},
			{"text": "cut", "finish_reason": "length"},
			{"tool_calls": [{"id": "c1", "name": "read", "arguments": "{}"}]},
			{"status": 502, "body": "<html>bad gateway</html>", "delay": "1s"}
		],
		"fallback": {"echo": true}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &mockprovider.Script{
		Steps: []mockprovider.Step{
			{Status: 429, Headers: map[string]string{"Retry-After": "2"}},
			{Reasoning: "hm", Text: "Hello", Chunks: 3, ChunkDelay: "100ms"},
			{Text: "abc", DropAfter: ptr(1)},
			{StallAfter: ptr(0)},
			{Text: "x", StreamError: json.RawMessage(`{"message": "boom", "code": 500}`)},
			{Empty: true},
			{Text: "cut", FinishReason: "length"},
			{ToolCalls: []mockprovider.ToolCall{{ID: "c1", Name: "read", Arguments: "{}"}}},
			{Status: 502, Body: json.RawMessage(`"<html>bad gateway</html>"`), Delay: "1s"},
		},
		Fallback: &mockprovider.Step{Echo: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("script (-want +got):\n%s", diff)
	}
}

func TestParseScript_Errors(t *testing.T) {
	tests := []struct {
		name, script, want string
	}{
		{"unknown field", `{"steps":[{"txt":"hi"}]}`, `unknown field "txt"`},
		{"unknown top-level field", `{"step":[]}`, `unknown field "step"`},
		{"status out of range", `{"steps":[{"text":"a"},{"status":99}]}`, "steps[1]: status: 99 is not 200 or an error status"},
		{"3xx status", `{"steps":[{"status":302}]}`, "steps[0]: status: 302"},
		{"status with drop_after", `{"steps":[{"status":429,"drop_after":1}]}`, "steps[0]: drop_after: cannot be combined with status 429"},
		{"status with text", `{"steps":[{"status":500,"text":"x"}]}`, "steps[0]: text: cannot be combined with status 500"},
		{"body without error status", `{"steps":[{"text":"x","body":{}}]}`, "steps[0]: body: only an error status"},
		{"negative chunks", `{"steps":[{"text":"x","chunks":-1}]}`, "steps[0]: chunks: -1 is negative"},
		{"negative drop_after", `{"steps":[{"drop_after":-2}]}`, "steps[0]: drop_after: -2 is negative"},
		{"negative stall_after", `{"steps":[{"stall_after":-1}]}`, "steps[0]: stall_after: -1 is negative"},
		{"drop and stall", `{"steps":[{"drop_after":1,"stall_after":1}]}`, "steps[0]: stall_after: cannot be combined with drop_after"},
		{"drop and stream_error", `{"steps":[{"drop_after":1,"stream_error":{}}]}`, "steps[0]: stream_error: cannot be combined with drop_after"},
		{"bad chunk_delay", `{"steps":[{"chunk_delay":"fast"}]}`, `steps[0]: chunk_delay: "fast" is not a non-negative duration`},
		{"negative delay", `{"steps":[{"delay":"-1s"}]}`, `steps[0]: delay: "-1s" is not a non-negative duration`},
		{"unknown finish_reason", `{"steps":[{"finish_reason":"eos"}]}`, `steps[0]: finish_reason: "eos" is not one of`},
		{"echo with text", `{"steps":[{"echo":true,"text":"x"}]}`, "steps[0]: echo: cannot be combined with text"},
		{"empty with text", `{"steps":[{"empty":true,"text":"x"}]}`, "steps[0]: text: cannot be combined with empty"},
		{"tool call without name", `{"steps":[{"tool_calls":[{"id":"c"}]}]}`, "steps[0]: tool_calls[0].name: missing"},
		{"bad fallback", `{"steps":[],"fallback":{"status":700}}`, "fallback: status: 700"},
		{"wrong type", `{"steps":[{"chunks":"3"}]}`, "Step.steps.chunks"},
		{"trailing data", `{"steps":[]} {}`, "unexpected data after the script object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mockprovider.ParseScript([]byte(tt.script))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseScript() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestLoadScript(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"steps":[{"text":"hi"}]}`), 0o644)
	os.WriteFile(bad, []byte(`{"steps":[{"status":1}]}`), 0o644)

	s, err := mockprovider.LoadScript(good)
	if err != nil || len(s.Steps) != 1 || s.Steps[0].Text != "hi" {
		t.Errorf("LoadScript(good) = %+v, %v", s, err)
	}
	if _, err := mockprovider.LoadScript(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "steps[0]: status") {
		t.Errorf("LoadScript(bad) = %v, want the path and the step named", err)
	}
	if _, err := mockprovider.LoadScript(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadScript(missing) = %v, want ErrNotExist", err)
	}
}

// The wire format, pinned byte for byte.
func TestMock_StreamBytes(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Reasoning: "hm", Text: "Hi <b>"}}})
	resp, body := do(t, t.Context(), m, "POST", "/v1/chat/completions", chatBody)
	const head = `"id":"chatcmpl-mock-1","object":"chat.completion.chunk","created":1700000000,"model":"m1"`
	want := "" +
		`data: {` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"hm"},"finish_reason":null}]}` + "\n\n" +
		`data: {` + head + `,"choices":[{"index":0,"delta":{"content":"Hi <b>"},"finish_reason":null}]}` + "\n\n" +
		`data: {` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
		`data: {` + head + `,"choices":[],"usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}}` + "\n\n" +
		"data: [DONE]\n\n"
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Request-Id") != "mock-req-1" {
		t.Errorf("status %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// Do and ServeHTTP must produce the same bytes for the same script: one
// writer serves both.
func TestMock_SameBytesOverHTTP(t *testing.T) {
	script := &mockprovider.Script{Steps: []mockprovider.Step{
		{Reasoning: "let me think", Text: "Hello, world", Chunks: 3},
		{Status: 429, Headers: map[string]string{"Retry-After": "2", "retry-after-ms": "2000"}},
		{Status: 502, Body: json.RawMessage(`"<html>bad gateway</html>"`)},
		{Status: 529},
		{Text: "abcdef", Chunks: 3, DropAfter: ptr(2)},
		{Text: "abc", StreamError: json.RawMessage(`{"message":"boom","type":"server_error","code":"internal"}`)},
		{ToolCalls: []mockprovider.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"a"}`}}},
		{Empty: true},
		{Echo: true, FinishReason: "length"},
	}}
	inMem := mockprovider.New(script)
	overHTTP := mockprovider.New(script)
	srv, err := mockprovider.Serve(t.Context(), "127.0.0.1:0", overHTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	type answer struct {
		Status  int
		Headers map[string]string
		Body    string
	}
	pick := func(h http.Header) map[string]string {
		out := map[string]string{}
		for _, k := range []string{"Content-Type", "X-Request-Id", "Retry-After", "Retry-After-Ms"} {
			if v := h.Get(k); v != "" {
				out[k] = v
			}
		}
		return out
	}
	for i := range len(script.Steps) + 1 { // +1: the exhausted answer
		resp, body := do(t, t.Context(), inMem, "POST", "/v1/chat/completions", chatBody)
		want := answer{resp.StatusCode, pick(resp.Header), string(body)}

		req, _ := http.NewRequestWithContext(t.Context(), "POST", srv.BaseURL()+"/chat/completions", strings.NewReader(chatBody))
		req.Header.Set("Authorization", "Bearer sk-secret")
		hresp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		hbody, err := io.ReadAll(hresp.Body)
		hresp.Body.Close()
		if err != nil {
			t.Fatalf("request %d: reading body: %v", i+1, err)
		}
		got := answer{hresp.StatusCode, pick(hresp.Header), string(hbody)}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d: Do (-) vs HTTP (+):\n%s", i+1, diff)
		}
	}
	if diff := cmp.Diff(inMem.Requests(), overHTTP.Requests(), cmpopts.IgnoreFields(mockprovider.Recorded{}, "Time", "Header")); diff != "" {
		t.Errorf("recorded requests differ (-Do +HTTP):\n%s", diff)
	}
}

func TestMock_RoutingFallbackExhausted(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "one"}}})
	type result struct {
		Status int
		Code   string
	}
	codeOf := func(body []byte) string {
		var e struct {
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal(body, &e)
		return e.Error.Code
	}
	var got []result
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/embeddings", chatBody},
		{"GET", "/v1/chat/completions", ""},
		{"POST", "/v1/chat/completions", "{not json"},
		{"POST", "/v1/chat/completions", chatBody}, // step 0: routing errors consumed nothing
		{"POST", "/chat/completions", chatBody},    // exhausted
	} {
		resp, body := do(t, t.Context(), m, r.method, r.path, r.body)
		got = append(got, result{resp.StatusCode, codeOf(body)})
	}
	want := []result{{404, "not_found"}, {405, "method_not_allowed"}, {400, "invalid_json"}, {200, ""}, {500, "mock_script_exhausted"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	type rec struct {
		Step            int
		Fallback, Exhst bool
		Status          int
	}
	var recs []rec
	for _, r := range m.Requests() {
		recs = append(recs, rec{r.Step, r.Fallback, r.Exhausted, r.Status})
	}
	wantRecs := []rec{{-1, false, false, 404}, {-1, false, false, 405}, {-1, false, false, 400}, {0, false, false, 200}, {-1, false, true, 500}}
	if diff := cmp.Diff(wantRecs, recs); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}

	fb := mockprovider.New(&mockprovider.Script{Fallback: &mockprovider.Step{Echo: true}})
	for range 2 {
		if _, body := do(t, t.Context(), fb, "POST", "/v1/chat/completions", chatBody); !bytes.Contains(body, []byte(`"content":"You said: Hello"`)) {
			t.Errorf("fallback echo body:\n%s", body)
		}
	}
	if r := fb.Requests(); len(r) != 2 || !r[1].Fallback || r[1].Step != -1 {
		t.Errorf("fallback requests = %+v", r)
	}
}

// TestMock_Models: GET /v1/models lists Script.Models, or is a 404 without
// them; either way no step is consumed and nothing is recorded.
func TestMock_Models(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Models: []string{"a", "b"}, Steps: []mockprovider.Step{{Text: "x"}}})
	resp, body := do(t, t.Context(), m, "GET", "/v1/models", "")
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`{"id":"a","object":"model"`)) || !bytes.Contains(body, []byte(`"id":"b"`)) {
		t.Errorf("GET /v1/models: %d %s", resp.StatusCode, body)
	}
	if resp, _ := do(t, t.Context(), m, "POST", "/models", ""); resp.StatusCode != 405 {
		t.Errorf("POST /models: %d, want 405", resp.StatusCode)
	}
	if resp, _ := do(t, t.Context(), mockprovider.New(&mockprovider.Script{}), "GET", "/v1/models", ""); resp.StatusCode != 404 {
		t.Errorf("GET /v1/models without models: %d, want 404", resp.StatusCode)
	}
	if resp, body := do(t, t.Context(), mockprovider.New(&mockprovider.Script{Models: []string{}}), "GET", "/v1/models", ""); resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"data":[]`)) {
		t.Errorf("GET /v1/models with an empty list: %d %s", resp.StatusCode, body)
	}
	if m.Count() != 0 || m.ModelListRequests() != 2 {
		t.Errorf("Count() = %d, ModelListRequests() = %d; want 0 and 2", m.Count(), m.ModelListRequests())
	}
	if _, body := do(t, t.Context(), m, "POST", "/v1/chat/completions", chatBody); !bytes.Contains(body, []byte(`"content":"x"`)) {
		t.Errorf("the first chat request did not get step 0: %s", body)
	}
}

func TestMock_RequestsAndLog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "a"}, {Status: 500}}})
		var log bytes.Buffer
		m.SetLog(&log)
		start := time.Now()
		do(t, t.Context(), m, "POST", "/v1/chat/completions", chatBody)
		time.Sleep(time.Second)
		do(t, t.Context(), m, "POST", "/v1/chat/completions", chatBody)

		msgs := []mockprovider.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "Hello"}}
		want := []mockprovider.Recorded{
			{Seq: 1, Time: start, Method: "POST", Path: "/v1/chat/completions", Model: "m1", Messages: msgs, MaxTokens: 64,
				Stream: true, IncludeUsage: true, Step: 0, Status: 200, Auth: true, Header: http.Header{"Content-Type": {"application/json"}}},
			{Seq: 2, Time: start.Add(time.Second), Method: "POST", Path: "/v1/chat/completions", Model: "m1", Messages: msgs, MaxTokens: 64,
				Stream: true, IncludeUsage: true, Step: 1, Status: 500, Auth: true, Header: http.Header{"Content-Type": {"application/json"}}},
		}
		if diff := cmp.Diff(want, m.Requests()); diff != "" {
			t.Errorf("Requests() (-want +got):\n%s", diff)
		}
		if m.Count() != 2 {
			t.Errorf("Count() = %d, want 2", m.Count())
		}
		if bytes.Contains(log.Bytes(), []byte("sk-secret")) || bytes.Contains(log.Bytes(), []byte("Authorization")) {
			t.Errorf("log has credentials:\n%s", log.String())
		}
		var logged []mockprovider.Recorded
		for line := range strings.Lines(log.String()) {
			var r mockprovider.Recorded
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatalf("log line %q: %v", line, err)
			}
			logged = append(logged, r)
		}
		if diff := cmp.Diff(want, logged); diff != "" {
			t.Errorf("log lines (-want +got):\n%s", diff)
		}
	})
}

// readEvents reads SSE events from body, noting the fake time of each.
func readEvents(t *testing.T, body io.Reader, start time.Time) (events []string, at []time.Duration, err error) {
	t.Helper()
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			events = append(events, line)
			at = append(at, time.Since(start))
		}
	}
	return events, at, sc.Err()
}

func TestMock_DelayAndChunkDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "ab", Chunks: 2, Delay: "2s", ChunkDelay: "1s"}}})
		start := time.Now()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://mock.invalid/v1/chat/completions", strings.NewReader(chatBody))
		resp, err := m.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("Do() returned after %v, want 2s (delay)", d)
		}
		_, at, err := readEvents(t, resp.Body, start)
		if err != nil {
			t.Fatal(err)
		}
		// two deltas 1s apart, the finish chunk 1s later, then usage and
		// [DONE] at once
		want := []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("event times (-want +got):\n%s", diff)
		}
	})
}

func TestMock_DoStallEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "abc", Chunks: 3, StallAfter: ptr(1)}}})
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://mock.invalid/v1/chat/completions", strings.NewReader(chatBody))
		resp, err := m.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"content":"a"`) {
			t.Fatalf("first event = %q, %v", line, err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(br)
			done <- err
		}()
		time.Sleep(time.Hour)
		synctest.Wait() // the reader and the mock are both parked
		select {
		case err := <-done:
			t.Fatalf("body ended during the stall: %v", err)
		default:
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("body read = %v, want context.Canceled", err)
		}
		// synctest.Test fails if the mock's writer goroutine outlives this.
	})
}

func TestMock_DoCancelledBeforeOrDuringDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Status: 503, Delay: "10s"}}})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://mock.invalid/v1/chat/completions", strings.NewReader(chatBody))
		start := time.Now()
		if _, err := m.Do(req); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != time.Second {
			t.Errorf("Do() = %v after %v, want DeadlineExceeded after 1s", err, time.Since(start))
		}
		if _, err := m.Do(req); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Do() with a dead context = %v", err)
		}
		if m.Count() != 1 {
			t.Errorf("Count() = %d: a request whose context was already done never reached the mock", m.Count())
		}
	})
}

func TestMock_ConcurrentRequestsTakeDistinctSteps(t *testing.T) {
	const n = 20
	steps := make([]mockprovider.Step, n)
	for i := range steps {
		steps[i] = mockprovider.Step{Text: "x"}
	}
	m := mockprovider.New(&mockprovider.Script{Steps: steps})
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { do(t, t.Context(), m, "POST", "/v1/chat/completions", chatBody) })
	}
	wg.Wait()
	var got []int
	for _, r := range m.Requests() {
		got = append(got, r.Step)
	}
	slices.Sort(got)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps used (-want +got):\n%s", diff)
	}
}

// Closing the server ends a stalled stream instead of waiting for it.
func TestServe_CloseEndsStalledStreams(t *testing.T) {
	m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "ab", Chunks: 2, StallAfter: ptr(1)}}})
	srv, err := mockprovider.Serve(t.Context(), "127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(srv.BaseURL()+"/chat/completions", "application/json", strings.NewReader(chatBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"content":"a"`) {
		t.Fatalf("first event = %q, %v", line, err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close() = %v", err)
	}
	io.ReadAll(br) // returns (an error or a clean end) instead of hanging
	if err := srv.Close(); err != nil {
		t.Errorf("second Close() = %v", err)
	}
}

// TestMock_StrictAlternation: with strict_alternation the mock refuses, with
// 400 and without consuming a step, what a strict provider refuses.
func TestMock_StrictAlternation(t *testing.T) {
	tests := []struct {
		name     string
		messages string
		want     string // "" = accepted
	}{
		{"alternating with tool results", `[{"role":"system","content":"s"},{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"assistant","content":"ok"},{"role":"user","content":"b"}]`, ""},
		{"two user messages", `[{"role":"user","content":"a"},{"role":"user","content":"b"}]`, "messages[1]: two user messages in a row"},
		{"starts with assistant", `[{"role":"system","content":"s"},{"role":"assistant","content":"a"}]`, "messages[1]: the conversation must start with a user message"},
		{"unanswered call", `[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"b"}]`, `messages[2]: tool call "c1" has no tool message answering it`},
		{"user right after tool results", `[{"role":"user","content":"a"},{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"},{"role":"user","content":"b"}]`, "messages[3]: a user message right after tool results; the assistant must reply first"},
		{"stray tool message", `[{"role":"user","content":"a"},{"role":"tool","tool_call_id":"c9","content":"r"}]`, "messages[1]: a tool message that answers no tool call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "fine"}}, StrictAlternation: true})
			resp, body := do(t, t.Context(), m, "POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":`+tt.messages+`}`)
			if tt.want == "" {
				if resp.StatusCode != 200 || m.Requests()[0].Step != 0 {
					t.Fatalf("status %d, step %d; want 200 from step 0: %s", resp.StatusCode, m.Requests()[0].Step, body)
				}
				return
			}
			if resp.StatusCode != 400 || !strings.Contains(strings.ReplaceAll(string(body), `\"`, `"`), tt.want) {
				t.Errorf("status %d, body %s; want 400 saying %q", resp.StatusCode, body, tt.want)
			}
			if m.Requests()[0].Step != -1 {
				t.Errorf("a refused request consumed step %d", m.Requests()[0].Step)
			}
		})
	}
}

// A bucket of 2 requests per 10 s: the third in a window is refused with
// the wait to its end and consumes no step; the next window serves again.
func TestMock_Bucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := mockprovider.New(&mockprovider.Script{Bucket: &mockprovider.Bucket{Requests: 2, Window: "10s"}, Steps: []mockprovider.Step{{Text: "a"}, {Text: "b"}, {Text: "c"}}})
		type seen struct{ Status, Remaining, Reset, RetryAfter string }
		get := func() seen {
			resp, _ := do(t, t.Context(), m, http.MethodPost, "/v1/chat/completions", chatBody)
			h := resp.Header
			return seen{resp.Status[:3], h.Get("X-Ratelimit-Remaining-Requests"), h.Get("X-Ratelimit-Reset-Requests"), h.Get("Retry-After")}
		}
		var got []seen
		got = append(got, get())
		time.Sleep(1500 * time.Millisecond)
		got = append(got, get(), get())
		time.Sleep(8500 * time.Millisecond)
		got = append(got, get())
		want := []seen{{"200", "1", "10s", ""}, {"200", "0", "8.5s", ""}, {"429", "0", "8.5s", "9"}, {"200", "1", "10s", ""}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		var steps []int
		for _, r := range m.Requests() {
			steps = append(steps, r.Step)
		}
		if diff := cmp.Diff([]int{0, 1, -1, 2}, steps); diff != "" {
			t.Errorf("steps (-want +got):\n%s", diff)
		}
	})
	for _, bad := range []string{`{"bucket":{"requests":0,"window":"10s"}}`, `{"bucket":{"requests":4,"window":"soon"}}`, `{"bucket":{"requests":4,"window":"-1s"}}`} {
		if _, err := mockprovider.ParseScript([]byte(bad)); err == nil || !strings.Contains(err.Error(), "bucket") {
			t.Errorf("ParseScript(%s) = %v, want a bucket error", bad, err)
		}
	}
}
