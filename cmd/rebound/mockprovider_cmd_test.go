package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// mockProviderProc is `rebound mock-provider` running in a goroutine.
type mockProviderProc struct {
	baseURL string
	cancel  context.CancelFunc
	code    chan int
	rest    chan string // stdout after the URL line, once the command returned
	stderr  *mockProviderBuffer
}

type mockProviderBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *mockProviderBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *mockProviderBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMockProvider runs the subcommand and reads the base URL it prints.
func startMockProvider(t *testing.T, args ...string) *mockProviderProc {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	p := &mockProviderProc{cancel: cancel, code: make(chan int, 1), rest: make(chan string, 1), stderr: &mockProviderBuffer{}}
	go func() {
		code := runEnv(ctx, append([]string{"mock-provider"}, args...), strings.NewReader(""), pw, p.stderr, env{getenv: func(string) string { return "" }})
		pw.Close()
		p.code <- code
	}()
	r := bufio.NewReader(pr)
	line, err := r.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("reading the base URL: %v (exit %d)\nstderr:\n%s", err, <-p.code, p.stderr.String())
	}
	p.baseURL = strings.TrimSuffix(line, "\n")
	go func() {
		b, _ := io.ReadAll(r)
		p.rest <- string(b)
	}()
	t.Cleanup(cancel)
	return p
}

// stop cancels the command's context, as SIGINT does, and returns its exit
// code.
func (p *mockProviderProc) stop(t *testing.T) int {
	t.Helper()
	p.cancel()
	select {
	case code := <-p.code:
		if rest := <-p.rest; rest != "" {
			t.Errorf("stdout after the URL line: %q, want nothing", rest)
		}
		return code
	case <-time.After(10 * time.Second):
		t.Fatalf("mock-provider did not stop after its context ended\nstderr:\n%s", p.stderr.String())
		return -1
	}
}

func mockProviderPost(t *testing.T, c *http.Client, baseURL, user string) *http.Response {
	t.Helper()
	content, _ := json.Marshal(user)
	body := `{"model":"mock-model","stream":true,"messages":[{"role":"user","content":` + string(content) + `}]}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, baseURL+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-secret-do-not-log")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// sseContent concatenates the content deltas of an SSE body and reports
// whether it ended with [DONE].
func mockProviderSSE(t *testing.T, body string) (content, finish string, done bool) {
	t.Helper()
	for line := range strings.SplitSeq(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("bad SSE data %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			content += ch.Delta.Content
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	return content, finish, done
}

func TestMockProvider_ServesScriptOverHTTP(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	logPath := filepath.Join(dir, "requests.jsonl")
	os.WriteFile(script, []byte(`{
		"steps": [
			{"text": "Hello from the scripted mock.", "chunks": 3},
			{"status": 429, "headers": {"Retry-After": "2"}}
		],
		"fallback": {"echo": true}
	}`), 0o644)
	p := startMockProvider(t, "--addr", "127.0.0.1:0", "--script", script, "--log", logPath)
	if !strings.HasPrefix(p.baseURL, "http://127.0.0.1:") || !strings.HasSuffix(p.baseURL, "/v1") {
		t.Fatalf("base URL line = %q, want http://127.0.0.1:<port>/v1", p.baseURL)
	}
	c := &http.Client{}
	defer c.CloseIdleConnections()

	// Step 0: a streamed reply in three deltas.
	resp := mockProviderPost(t, c, p.baseURL, "hi")
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("step 0: %d %s, want 200 text/event-stream\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	content, finish, done := mockProviderSSE(t, string(body))
	if content != "Hello from the scripted mock." || finish != "stop" || !done {
		t.Errorf("step 0: content %q finish %q [DONE] %v\n%s", content, finish, done, body)
	}
	if n := strings.Count(string(body), `"content":`); n != 3 {
		t.Errorf("step 0: %d content deltas, want 3", n)
	}

	// Step 1: a 429 with Retry-After.
	resp = mockProviderPost(t, c, p.baseURL, "again")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("step 1: %d Retry-After %q, want 429 and 2", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if !strings.Contains(string(body), `"rate_limit_exceeded"`) {
		t.Errorf("step 1 body = %s, want an OpenAI rate-limit error", body)
	}

	// After the steps: the echo fallback.
	resp = mockProviderPost(t, c, p.baseURL, "third time")
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if content, _, done := mockProviderSSE(t, string(body)); content != "You said: third time" || !done {
		t.Errorf("fallback: content %q [DONE] %v", content, done)
	}

	// One JSON line per request, already written when each reply started.
	logData, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(logData), "sk-secret") || strings.Contains(strings.ToLower(string(logData)), `"authorization"`) {
		t.Errorf("the log holds credentials:\n%s", logData)
	}
	lines := strings.Split(strings.TrimSuffix(string(logData), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("log has %d lines, want 3:\n%s", len(lines), logData)
	}
	want := []struct {
		step, status int
		fallback     bool
		user         string
	}{{0, 200, false, "hi"}, {1, 429, false, "again"}, {-1, 200, true, "third time"}}
	for i, line := range lines {
		var rec mockprovider.Recorded
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %d: %v: %s", i+1, err, line)
		}
		w := want[i]
		if rec.Seq != i+1 || rec.Step != w.step || rec.Status != w.status || rec.Fallback != w.fallback ||
			!rec.Auth || !rec.Stream || rec.Model != "mock-model" || rec.Path != "/v1/chat/completions" ||
			len(rec.Messages) != 1 || rec.Messages[0].Content != w.user {
			t.Errorf("log line %d = %s, want seq %d step %d status %d fallback %v auth, user %q", i+1, line, i+1, w.step, w.status, w.fallback, w.user)
		}
	}

	if code := p.stop(t); code != 0 {
		t.Errorf("exit code after cancel = %d, want 0\nstderr:\n%s", code, p.stderr.String())
	}
	stderr := p.stderr.String()
	for _, want := range []string{"mock provider listening", `"status":429`, "mock provider stopped", `"requests":3`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "sk-secret") {
		t.Errorf("stderr holds the API key:\n%s", stderr)
	}
}

func TestMockProvider_DefaultScriptEchoesAndLogsToStderr(t *testing.T) {
	p := startMockProvider(t, "--addr", "localhost:0", "--log", "-")
	c := &http.Client{}
	defer c.CloseIdleConnections()
	for _, msg := range []string{"one", "two"} {
		resp := mockProviderPost(t, c, p.baseURL, msg)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if content, _, done := mockProviderSSE(t, string(body)); resp.StatusCode != 200 || content != "You said: "+msg || !done {
			t.Errorf("%s: %d content %q [DONE] %v", msg, resp.StatusCode, content, done)
		}
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	stderr := p.stderr.String()
	if n := strings.Count(stderr, `"seq":`); n != 4 { // two request lines, two summaries
		t.Errorf("stderr has %d seq fields, want 4 (a --log line and a summary per request):\n%s", n, stderr)
	}
	if !strings.Contains(stderr, `"script":"default (echo)"`) {
		t.Errorf("stderr does not name the default script:\n%s", stderr)
	}
	if strings.Contains(stderr, "non-loopback") {
		t.Errorf("a loopback --addr is warned about:\n%s", stderr)
	}
}

func TestMockProvider_RefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:8080", "example.com:80", "127.0.0.1.example.com:80"} {
		t.Run(addr, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code := runEnv(t.Context(), []string{"mock-provider", "--addr", addr}, nil, &stdout, &stderr, env{})
			if code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if msg := stderr.String(); !strings.Contains(msg, "--addr") || !strings.Contains(msg, "--allow-remote") || !strings.Contains(msg, addr) {
				t.Errorf("stderr = %q, want it to name --addr, the address and --allow-remote", msg)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing (no URL: it must not listen)", stdout.String())
			}
		})
	}
	t.Run("malformed", func(t *testing.T) {
		var stderr strings.Builder
		if code := runEnv(t.Context(), []string{"mock-provider", "--addr", "127.0.0.1"}, nil, io.Discard, &stderr, env{}); code != 2 {
			t.Errorf("exit code = %d, want 2", code)
		}
		if !strings.Contains(stderr.String(), "host:port") {
			t.Errorf("stderr = %q, want it to ask for host:port", stderr.String())
		}
	})
}

func TestMockProvider_LoopbackAddresses(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true}, {"127.3.2.1:9", true}, {"[::1]:0", true}, {"localhost:8080", true}, {"LOCALHOST:0", true},
		{"[::ffff:127.0.0.1]:0", true},
		{"0.0.0.0:0", false}, {":0", false}, {"[::]:0", false}, {"10.0.0.1:0", false}, {"[fe80::1%eth0]:0", false}, {"localhost.example:0", false},
	}
	for _, tt := range tests {
		got, err := mockLoopbackAddr(tt.addr)
		if err != nil || got != tt.ok {
			t.Errorf("mockLoopbackAddr(%q) = %v, %v; want %v", tt.addr, got, err, tt.ok)
		}
	}
}

// With --allow-remote a non-loopback address is served (here 0.0.0.0, which
// loopback clients reach too) with a warning.
func TestMockProvider_AllowRemote(t *testing.T) {
	p := startMockProvider(t, "--addr", "0.0.0.0:0", "--allow-remote")
	if !strings.HasPrefix(p.baseURL, "http://0.0.0.0:") && !strings.HasPrefix(p.baseURL, "http://[::]:") {
		t.Errorf("base URL = %q", p.baseURL)
	}
	if code := p.stop(t); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if !strings.Contains(p.stderr.String(), "non-loopback") {
		t.Errorf("no warning on stderr:\n%s", p.stderr.String())
	}
}

func TestMockProvider_BadScript(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, script string
		want         []string
	}{
		{"conflicting fields", `{"steps":[{"text":"ok"},{"status":429,"text":"no"}]}`, []string{"steps[1]", "text", "status 429"}},
		{"typo", `{"steps":[{"stauts":500}]}`, []string{`"stauts"`}},
		{"bad fallback", `{"fallback":{"delay":"soon"}}`, []string{"fallback", "delay"}},
		{"not json", `steps: []`, []string{"mock script"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "script"+string(rune('0'+i))+".json")
			os.WriteFile(path, []byte(tt.script), 0o644)
			var stdout, stderr strings.Builder
			code := runEnv(t.Context(), []string{"mock-provider", "--script", path}, nil, &stdout, &stderr, env{})
			if code != 1 {
				t.Errorf("exit code = %d, want 1", code)
			}
			for _, w := range append([]string{path}, tt.want...) {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr = %q, want it to contain %q", stderr.String(), w)
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		var stderr strings.Builder
		path := filepath.Join(dir, "nope.json")
		if code := runEnv(t.Context(), []string{"mock-provider", "--script", path}, nil, io.Discard, &stderr, env{}); code != 1 {
			t.Errorf("exit code = %d, want 1", code)
		}
		if !strings.Contains(stderr.String(), path) {
			t.Errorf("stderr = %q, want it to name %s", stderr.String(), path)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		var stderr strings.Builder
		code := runEnv(t.Context(), []string{"mock-provider", "--script", "-"}, strings.NewReader(`{"steps":[{"chunks":-1}]}`), io.Discard, &stderr, env{})
		if code != 1 || !strings.Contains(stderr.String(), "stdin") || !strings.Contains(stderr.String(), "steps[0]: chunks") {
			t.Errorf("exit code %d, stderr %q; want 1 naming stdin and steps[0]: chunks", code, stderr.String())
		}
	})
}

func TestMockProvider_Help(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := runEnv(t.Context(), []string{"mock-provider", "--help"}, nil, &stdout, &stderr, env{}); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	if stdout.Len() != 0 {
		t.Errorf("help went to stdout: %q", stdout.String())
	}
	for _, w := range []string{"Usage: rebound mock-provider", "-addr", "-script", "-log", "-allow-remote", "docs/mock-provider.md", "mock-script.schema.json", `"bucket"`} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("help lacks %q:\n%s", w, stderr.String())
		}
	}

	stderr.Reset()
	runEnv(t.Context(), []string{"--help"}, nil, io.Discard, &stderr, env{})
	if !helpListsCommand(stderr.String(), "mock-provider") {
		t.Errorf("rebound --help does not list mock-provider:\n%s", stderr.String())
	}

	stderr.Reset()
	if code := runEnv(t.Context(), []string{"mock-provider", "extra"}, nil, io.Discard, &stderr, env{}); code != 2 || !strings.Contains(stderr.String(), `unexpected argument "extra"`) {
		t.Errorf("extra argument: exit %d, stderr %q", code, stderr.String())
	}
}

// helpListsCommand reports whether `rebound --help` has a line naming the
// command with its summary.
func helpListsCommand(help, name string) bool {
	for line := range strings.SplitSeq(help, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == name && strings.Contains(line, commands[name].summary) {
			return true
		}
	}
	return false
}

// The example scripts parse and agree with the published schema.
func TestMockProvider_ExampleScripts(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "mock", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no example scripts in testdata/mock")
	}
	sch, err := jsonschema.NewCompiler().Compile(filepath.Join("..", "..", "schema", "mock-script.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := mockprovider.LoadScript(path); err != nil {
				t.Error(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			doc, err := jsonschema.UnmarshalJSON(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(doc); err != nil {
				t.Error(err)
			}
		})
	}
	// echo.json is the default script, spelled out.
	echo, err := mockprovider.LoadScript(filepath.Join("..", "..", "testdata", "mock", "echo.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(echo.Steps) != 0 || echo.Fallback == nil || !reflect.DeepEqual(*echo.Fallback, mockprovider.Step{Echo: true}) {
		t.Errorf("echo.json = %+v, want the default script {\"fallback\":{\"echo\":true}}", echo)
	}
}

// Every script or step shown in docs/mock-provider.md is valid.
func TestMockProvider_DocExamplesParse(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "mock-provider.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(doc), "```json\n")[1:]
	n := 0
	for _, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		dec := json.NewDecoder(strings.NewReader(b))
		for dec.More() {
			var v map[string]json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("a JSON example does not parse: %v\n%s", err, b)
			}
			if v["seq"] != nil || v["json.schemas"] != nil {
				continue // the --log line and the editor settings
			}
			raw, _ := json.Marshal(v)
			if v["steps"] == nil && v["fallback"] == nil {
				raw = []byte(`{"steps":[` + string(raw) + `]}`)
			}
			if _, err := mockprovider.ParseScript(raw); err != nil {
				t.Errorf("%v\n%s", err, raw)
			}
			n++
		}
	}
	if n < 20 {
		t.Errorf("checked %d examples; the doc should show every fault", n)
	}
}
