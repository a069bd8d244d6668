package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
)

// fakeAgent answers with its function fields; a nil field fails the request
// (as -32603), which the test then sees on the wire.
type fakeAgent struct {
	NewSessionFunc  func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error)
	LoadSessionFunc func(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error)
	PromptFunc      func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error)
}

var _ acp.Agent = (*fakeAgent)(nil)

func (a *fakeAgent) NewSession(ctx context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if a.NewSessionFunc == nil {
		return acp.NewSessionResponse{}, errors.New("fakeAgent: unexpected NewSession")
	}
	return a.NewSessionFunc(ctx, req)
}

func (a *fakeAgent) LoadSession(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
	if a.LoadSessionFunc == nil {
		return acp.LoadSessionResponse{}, errors.New("fakeAgent: unexpected LoadSession")
	}
	return a.LoadSessionFunc(ctx, req, c)
}

func (a *fakeAgent) Prompt(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
	if a.PromptFunc == nil {
		return acp.PromptResponse{}, errors.New("fakeAgent: unexpected Prompt")
	}
	return a.PromptFunc(ctx, req, c)
}

// wire is a test client driving a Server through io.Pipes, in lockstep:
// write a line, read the lines it causes. Every line read is checked to be
// a JSON-RPC 2.0 message.
type wire struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error // Serve's result
	log   syncBuffer // what the server logged
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines to write
// and the test to read.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// serve starts a Server inside the current synctest bubble.
func serve(t *testing.T, ctx context.Context, agent acp.Agent, cfg acp.Config) *wire {
	t.Helper()
	w := serveUninitialized(t, ctx, agent, cfg)
	// A client initializes first; the tests that care send their own
	// initialize too, which is answered again.
	w.send(initializeLine)
	if got := w.recv(); !strings.Contains(got, `"id":"init"`) {
		t.Fatalf("initialize answered %s", got)
	}
	return w
}

// initializeLine is the initialize a client sends first, with no
// capabilities but _meta["rebound/retry"], so errors keep their data
// (TestServer_ErrorDataByClient covers the clients without it).
const initializeLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":{"rebound/retry":true}}}}`

// serveUninitialized is serve without the initialize a client sends first.
func serveUninitialized(t *testing.T, ctx context.Context, agent acp.Agent, cfg acp.Config) *wire {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{t: t, in: inW, lines: make(chan string, 64), done: make(chan error, 1)}
	// Log everything, to the test's output: the log calls run too, and a
	// failing test shows what the server saw.
	cfg.Logger = zerolog.New(io.MultiWriter(t.Output(), &w.log)).Level(zerolog.DebugLevel)
	srv := acp.NewServer(agent, cfg)
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.Close()
		w.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
	}()
	return w
}

func (w *wire) send(lines ...string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, strings.Join(lines, "\n")+"\n"); err != nil {
		w.t.Fatalf("write input: %v", err)
	}
}

// recv returns the next output line. If none ever comes, the bubble
// deadlocks and synctest fails the test at once.
func (w *wire) recv() string {
	w.t.Helper()
	line, ok := <-w.lines
	if !ok {
		w.t.Fatal("output ended, want another line")
	}
	checkMessage(w.t, line)
	return line
}

// end closes the input and returns what Serve returned; it fails the test
// on output nobody read.
func (w *wire) end() error {
	w.t.Helper()
	w.in.Close()
	for line := range w.lines {
		checkMessage(w.t, line)
		w.t.Errorf("unexpected output: %s", line)
	}
	return <-w.done
}

// checkMessage fails unless line is one JSON-RPC 2.0 request, notification
// or response.
func checkMessage(t *testing.T, line string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Errorf("output line is not a JSON object: %v: %s", err, line)
		return
	}
	_, method := m["method"]
	_, id := m["id"]
	_, result := m["result"]
	_, rpcErr := m["error"]
	isCall := method && !result && !rpcErr
	isResponse := !method && id && result != rpcErr
	if string(m["jsonrpc"]) != `"2.0"` || !(isCall || isResponse) {
		t.Errorf("output line is not a JSON-RPC 2.0 message: %s", line)
	}
}

func request(id int, method string, params any) string {
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func notification(method string, params any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// ping is a request every server answers (-32601): proof the connection is
// still up and that nothing was written before its answer.
const ping = `{"jsonrpc":"2.0","id":"ping","method":"rebound/ping"}`

const pong = `{"jsonrpc":"2.0","id":"ping","error":{"code":-32601,"message":"Method not found: rebound/ping","data":{"method":"rebound/ping"}}}`

// sameJSON compares two JSON texts as values.
func sameJSON(t *testing.T, what, want, got string) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %s: %v", want, err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: not JSON: %s", what, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func prompt(id int, sessionID, text string) string {
	return request(id, acp.MethodSessionPrompt, map[string]any{
		"sessionId": sessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": text}},
	})
}

func cancel(sessionID string) string {
	return notification(acp.MethodSessionCancel, map[string]any{"sessionId": sessionID})
}

func textUpdate(s string) acp.SessionUpdate {
	return acp.AgentMessageChunk("", acp.TextBlock(s))
}

func TestServer_Initialize(t *testing.T) {
	tests := []struct {
		name   string
		params any
	}{
		{"v1 client", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": true}}}},
		{"newer client still gets 1", map[string]any{"protocolVersion": 2}},
		{"no params", nil},
	}
	const want = `{"id":1,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":true},"sessionCapabilities":{"additionalDirectories":{}},"_meta":{"rebound":{"retry":true}}},"authMethods":[],"agentInfo":{"name":"rebound","version":"1.2.3"}},"jsonrpc":"2.0"}`
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{
					Version:          "1.2.3",
					CapabilitiesMeta: acp.Meta{"rebound": map[string]any{"retry": true}},
				})
				w.send(request(1, acp.MethodInitialize, tt.params))
				if got := w.recv(); got != want {
					t.Errorf("initialize reply:\n got %s\nwant %s", got, want)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v, want nil", err)
				}
			})
		})
	}
}

// The capabilities recorded at initialize are what the agent sees.
func TestServer_ClientCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []acp.ClientCapabilities
		agent := &fakeAgent{PromptFunc: func(_ context.Context, _ acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			got = append(got, c.Capabilities())
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "before initialize")) // served anyway, with no capabilities
		w.recv()
		w.send(request(2, acp.MethodInitialize, map[string]any{
			"protocolVersion":    1,
			"clientCapabilities": map[string]any{"terminal": true, "session": map[string]any{"notices": map[string]any{}}},
		}))
		w.recv()
		w.send(prompt(3, "s", "after"))
		w.recv()
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		if len(got) != 2 {
			t.Fatalf("agent saw %d prompts, want 2", len(got))
		}
		if got[0].Terminal || got[0].Notices() {
			t.Errorf("capabilities before initialize = %+v, want zero", got[0])
		}
		if !got[1].Terminal || !got[1].Notices() || got[1].Compaction() {
			t.Errorf("capabilities after initialize = %+v, want terminal and notices only", got[1])
		}
	})
}

// Bad lines are answered and skipped; the connection stays up.
func TestServer_BadInput(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("x", 2000) + `"}`
	tests := []struct {
		name     string
		line     string
		wantID   string // raw JSON; "" means no reply at all
		wantCode int
	}{
		{"not JSON", `{not json}`, "null", acp.CodeParseError},
		{"truncated", `{"jsonrpc":"2.0","id":1,"method":"initialize"`, "null", acp.CodeParseError},
		{"bare word", `hello`, "null", acp.CodeParseError},
		{"two values on a line", `{"a":1} {"b":2}`, "null", acp.CodeParseError},
		{"over the line limit", long, "null", acp.CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, "null", acp.CodeInvalidRequest},
		{"number", `42`, "null", acp.CodeInvalidRequest},
		{"string", `"hi"`, "null", acp.CodeInvalidRequest},
		{"empty object", `{}`, "null", acp.CodeInvalidRequest},
		{"method not a string", `{"jsonrpc":"2.0","id":7,"method":5}`, "7", acp.CodeInvalidRequest},
		{"string id kept", `{"jsonrpc":"2.0","id":"a","method":5}`, `"a"`, acp.CodeInvalidRequest},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"initialize"}`, "null", acp.CodeInvalidRequest},
		{"both method and result", `{"jsonrpc":"2.0","id":3,"method":"x","result":1}`, "3", acp.CodeInvalidRequest},
		{"empty line", ``, "", 0},
		{"blank line", "  \t ", "", 0},
		{"lone CR", "\r", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{MaxLineBytes: 1 << 10})
				w.send(tt.line, ping)
				if tt.wantID != "" {
					var got struct {
						ID    json.RawMessage `json:"id"`
						Error struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					line := w.recv()
					if err := json.Unmarshal([]byte(line), &got); err != nil {
						t.Fatal(err)
					}
					if string(got.ID) != tt.wantID || got.Error.Code != tt.wantCode {
						t.Errorf("reply %s: want id %s, code %d", line, tt.wantID, tt.wantCode)
					}
					wantPrefix := map[int]string{acp.CodeParseError: "Parse error: ", acp.CodeInvalidRequest: "Invalid Request: "}[tt.wantCode]
					if !strings.HasPrefix(got.Error.Message, wantPrefix) {
						t.Errorf("message %q, want prefix %q", got.Error.Message, wantPrefix)
					}
				}
				sameJSON(t, "reply to the next request", pong, w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v, want nil", err)
				}
			})
		})
	}
}

// The production limit, once: a 17 MiB line is refused and discarded.
func TestServer_RealLineLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		w.send(strings.Repeat("x", 17<<20), ping)
		sameJSON(t, "refusal",
			fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: line longer than %d bytes"}}`, acp.MaxLineBytes),
			w.recv())
		sameJSON(t, "next reply", pong, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

func TestServer_CRLFLineEnding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		w.send(ping + "\r")
		sameJSON(t, "reply", pong, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

func TestServer_MethodNotFound(t *testing.T) {
	tests := []struct{ method string }{{"session/set_mode"}, {"_zed/extension"}, {"nope"}}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
				w.send(request(4, tt.method, map[string]any{}))
				sameJSON(t, "reply",
					fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found: %s","data":{"method":%q}}}`, tt.method, tt.method),
					w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

// Notifications other than session/cancel produce no output: the first
// line after them is the answer to the request that follows.
func TestServer_IgnoredNotifications(t *testing.T) {
	tests := []struct{ name, line string }{
		{"extension", notification("_rebound/hello", map[string]any{"x": 1})},
		{"cancel_request", notification(acp.MethodCancelRequest, map[string]any{"requestId": 1})},
		{"unknown", notification("foo/bar", nil)},
		{"request method sent as notification", notification(acp.MethodInitialize, map[string]any{"protocolVersion": 1})},
		{"cancel of an unknown session", cancel("nobody")},
		{"cancel without params", `{"jsonrpc":"2.0","method":"session/cancel"}`},
		{"response nobody asked for", `{"jsonrpc":"2.0","id":99,"result":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
				w.send(tt.line, ping)
				sameJSON(t, "first output line", pong, w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

func TestServer_SessionNew(t *testing.T) {
	tests := []struct {
		name        string
		params      any
		wantReply   string
		wantRequest *acp.NewSessionRequest // nil: the agent must not be called
	}{
		{
			name:        "ok",
			params:      map[string]any{"cwd": "/work", "mcpServers": []any{}},
			wantReply:   `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`,
			wantRequest: &acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}},
		},
		{
			name:        "mcpServers missing is empty",
			params:      map[string]any{"cwd": "/work"},
			wantReply:   `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`,
			wantRequest: &acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}},
		},
		{
			name: "mcp servers",
			params: map[string]any{"cwd": "/work", "mcpServers": []any{
				map[string]any{"name": "fs", "command": "/bin/fs-mcp", "args": []any{"-v"}, "env": []any{map[string]any{"name": "A", "value": "1"}}},
				map[string]any{"type": "http", "name": "web", "url": "https://mcp.example/x", "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer t"}}},
			}},
			wantReply: `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`,
			wantRequest: &acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{
				{Name: "fs", Command: "/bin/fs-mcp", Args: []string{"-v"}, Env: []acp.EnvVariable{{Name: "A", Value: "1"}}},
				{Type: "http", Name: "web", URL: "https://mcp.example/x", Headers: []acp.HTTPHeader{{Name: "Authorization", Value: "Bearer t"}}},
			}},
		},
		{
			name:      "mcp server without a command",
			params:    map[string]any{"cwd": "/work", "mcpServers": []any{map[string]any{"name": "fs", "args": []any{}, "env": []any{}}}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: mcpServers[0] (\"fs\") is a stdio server: command is required"}}`,
		},
		{
			name:      "mcp server of an unknown transport",
			params:    map[string]any{"cwd": "/work", "mcpServers": []any{map[string]any{"type": "ws", "name": "x", "url": "ws://h"}}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: mcpServers[0] (\"x\") has type \"ws\"; the transports are stdio (no type), http and sse"}}`,
		},
		{
			name:      "http mcp server with a relative url",
			params:    map[string]any{"cwd": "/work", "mcpServers": []any{map[string]any{"type": "http", "name": "x", "url": "/mcp", "headers": []any{}}}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: mcpServers[0] (\"x\") is an http server: url must be an absolute http(s) URL, got \"/mcp\""}}`,
		},
		{
			name:      "mcp server without a name",
			params:    map[string]any{"cwd": "/work", "mcpServers": []any{map[string]any{"command": "/bin/x"}}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: mcpServers[0].name is required"}}`,
		},
		{
			name:      "relative cwd",
			params:    map[string]any{"cwd": "work", "mcpServers": []any{}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: cwd must be an absolute path, got \"work\""}}`,
		},
		{
			name:      "relative additional directory",
			params:    map[string]any{"cwd": "/work", "additionalDirectories": []any{"/lib", "docs"}, "mcpServers": []any{}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: additionalDirectories[1] must be an absolute path, got \"docs\""}}`,
		},
		{
			name:        "additional directories",
			params:      map[string]any{"cwd": "/work", "additionalDirectories": []any{"/lib"}, "mcpServers": []any{}},
			wantReply:   `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`,
			wantRequest: &acp.NewSessionRequest{Cwd: "/work", AdditionalDirectories: []string{"/lib"}, McpServers: []acp.McpServer{}},
		},
		{
			name:      "cwd missing",
			params:    map[string]any{"mcpServers": []any{}},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: cwd is required"}}`,
		},
		{
			name:      "cwd not a string",
			params:    map[string]any{"cwd": 3},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: cwd must be a string, not number"}}`,
		},
		{
			name:      "mcpServers not an array",
			params:    map[string]any{"cwd": "/work", "mcpServers": "none"},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: mcpServers must be an array, not string"}}`,
		},
		{
			name:      "no params",
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: params are required"}}`,
		},
		{
			name:      "params not an object",
			params:    []any{"/work"},
			wantReply: `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: params must be an object, not array"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got *acp.NewSessionRequest
				agent := &fakeAgent{NewSessionFunc: func(_ context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
					got = &req
					return acp.NewSessionResponse{SessionID: "sess-1"}, nil
				}}
				w := serve(t, t.Context(), agent, acp.Config{})
				w.send(request(1, acp.MethodSessionNew, tt.params))
				sameJSON(t, "reply", tt.wantReply, w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
				if diff := cmp.Diff(tt.wantRequest, got); diff != "" {
					t.Errorf("request the agent got (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// Errors are mapped to wire errors once, by errors.As: wrapping keeps the
// code. Both the session/new path and the turn path are covered.
func TestServer_AgentErrors(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantError string
	}{
		{"session not found", acp.NewSessionNotFound("s"),
			`{"code":-32002,"message":"Session not found: s","data":{"sessionId":"s"}}`},
		{"wrapped request error keeps its code", fmt.Errorf("x: %w", acp.NewSessionNotFound("s")),
			`{"code":-32002,"message":"Session not found: s","data":{"sessionId":"s"}}`},
		{"auth required", acp.NewAuthRequired("log in first"),
			`{"code":-32000,"message":"log in first"}`},
		{"request error with data", &acp.RequestError{Code: -32603, Message: "Provider failed", Data: map[string]any{"attempts": 3}},
			`{"code":-32603,"message":"Provider failed","data":{"attempts":3}}`},
		{"plain error", errors.New("disk full"),
			`{"code":-32603,"message":"disk full"}`},
		{"context canceled", fmt.Errorf("store: %w", context.Canceled),
			`{"code":-32800,"message":"Request cancelled"}`},
	}
	for _, tt := range tests {
		for _, method := range []string{acp.MethodSessionNew, acp.MethodSessionPrompt} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					agent := &fakeAgent{
						NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
							return acp.NewSessionResponse{}, tt.err
						},
						PromptFunc: func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
							return acp.PromptResponse{}, tt.err
						},
					}
					w := serve(t, t.Context(), agent, acp.Config{})
					if method == acp.MethodSessionNew {
						w.send(request(1, method, map[string]any{"cwd": "/w", "mcpServers": []any{}}))
					} else {
						w.send(prompt(1, "s", "hi"))
					}
					sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"error":`+tt.wantError+`}`, w.recv())
					if err := w.end(); err != nil {
						t.Errorf("Serve() = %v", err)
					}
				})
			})
		}
	}
}

// The end of input ends Serve; running turns are cancelled (ErrShutdown,
// which is an ErrCancelled) and still answered before the connection closes.
func TestServer_EOFCancelsRunningTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cause error
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			if err := c.Update(ctx, req.SessionID, textUpdate("working")); err != nil {
				return acp.PromptResponse{}, err
			}
			<-ctx.Done()
			cause = context.Cause(ctx)
			return acp.PromptResponse{}, ctx.Err()
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		w.recv()
		w.in.Close()
		sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v, want nil at the end of input", err)
		}
		if !errors.Is(cause, acp.ErrShutdown) || !errors.Is(cause, acp.ErrCancelled) {
			t.Errorf("cancel cause = %v, want ErrShutdown wrapping ErrCancelled", cause)
		}
	})
}

// When Serve's ctx is done, turns are cancelled and answered, then the
// connection closes and Serve returns ctx.Err().
func TestServer_ContextDoneStopsServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, stop := context.WithCancel(t.Context())
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			if err := c.Update(ctx, req.SessionID, textUpdate("working")); err != nil {
				return acp.PromptResponse{}, err
			}
			<-ctx.Done()
			return acp.PromptResponse{}, ctx.Err()
		}}
		w := serve(t, ctx, agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		w.recv()
		stop()
		sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
		if err := w.end(); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve() = %v, want %v", err, context.Canceled)
		}
	})
}

func TestServer_LoadSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got acp.LoadSessionRequest
		agent := &fakeAgent{LoadSessionFunc: func(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
			got = req
			if err := c.Update(ctx, req.SessionID, acp.UserMessageChunk("", acp.TextBlock("hi"))); err != nil {
				return acp.LoadSessionResponse{}, err
			}
			return acp.LoadSessionResponse{}, c.Update(ctx, req.SessionID, textUpdate("hello"))
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(request(1, acp.MethodSessionLoad, map[string]any{"sessionId": "s", "cwd": "/w", "mcpServers": []any{}}))
		for i, want := range []string{
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{}}`,
		} {
			sameJSON(t, fmt.Sprintf("line %d", i), want, w.recv())
		}
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		want := acp.LoadSessionRequest{SessionID: "s", Cwd: "/w", McpServers: []acp.McpServer{}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request the agent got (-want +got):\n%s", diff)
		}
	})
}

func TestServer_Authenticate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		w.send(request(1, acp.MethodAuthenticate, map[string]any{"methodId": "x"}))
		sameJSON(t, "reply", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params: Rebound advertises no authentication methods"}}`, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

func TestServer_ServeTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := acp.NewServer(&fakeAgent{}, acp.Config{})
		if err := srv.Serve(t.Context(), strings.NewReader(""), io.Discard); err != nil {
			t.Fatalf("first Serve() = %v", err)
		}
		if err := srv.Serve(t.Context(), strings.NewReader(""), io.Discard); err == nil {
			t.Error("second Serve() = nil, want an error")
		}
	})
}

// A line that fails to decode half way must not leave part of a message
// behind for the next line to be mistaken for.
func TestServer_FailedDecodeLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		// "Method" passes jsonrpc2's check for a request (struct fields
		// match in any case), then its Request decoder misses "method".
		w.send(`{"jsonrpc":"2.0","id":5,"Method":"x"}`, `{"jsonrpc":"2.0","id":99,"result":{}}`, ping)
		sameJSON(t, "refusal", `{"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"Invalid Request: missing method field"}}`, w.recv())
		sameJSON(t, "next reply", pong, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// A panicking agent gets an error reply, not a dead connection.
func TestServer_AgentPanic(t *testing.T) {
	for _, method := range []string{acp.MethodSessionNew, acp.MethodSessionLoad, acp.MethodSessionPrompt} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{
					NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
						panic("boom")
					},
					LoadSessionFunc: func(context.Context, acp.LoadSessionRequest, acp.Client) (acp.LoadSessionResponse, error) {
						panic("boom")
					},
					PromptFunc: func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
						panic("boom")
					},
				}
				w := serve(t, t.Context(), agent, acp.Config{})
				params := map[string]any{"sessionId": "s", "cwd": "/w", "mcpServers": []any{}, "prompt": []any{}}
				w.send(request(1, method, params))
				sameJSON(t, "reply", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"internal error in %s: boom"}}`, method), w.recv())
				w.send(ping)
				sameJSON(t, "next reply", pong, w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

func TestRequestError_DoesNotRepeatItsCause(t *testing.T) {
	cause := errors.New("The provider rejected the API key (401): bad key.")
	tests := []struct {
		err  *acp.RequestError
		want string
	}{
		{&acp.RequestError{Message: "The provider rejected the API key (401): bad key. Check OPENAI_API_KEY.", Err: cause},
			"The provider rejected the API key (401): bad key. Check OPENAI_API_KEY."},
		{&acp.RequestError{Message: "Invalid params", Err: errors.New("unexpected end of JSON")}, "Invalid params: unexpected end of JSON"},
		{&acp.RequestError{Message: "plain"}, "plain"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}
