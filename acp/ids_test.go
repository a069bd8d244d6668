package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// member returns the raw JSON of a top-level member of line ("" if absent).
func member(t *testing.T, line, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("reply %s: %v", line, err)
	}
	return string(m[name])
}

// rpcError decodes the error member of a reply.
func rpcError(t *testing.T, line string) (code int, message string) {
	t.Helper()
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(member(t, line, "error")), &e); err != nil {
		t.Fatalf("reply %s has no error: %v", line, err)
	}
	return e.Code, e.Message
}

// Every id ACP or JSON-RPC allows is answered byte for byte as it was sent,
// on the inline path (initialize, an unknown method) and on the goroutine
// paths (session/new, session/prompt). jsonrpc2 alone would answer -1 as
// 18446744073709551615, refuse 1.5 and 2^64-1, never answer id null, and
// re-escape "\u0041".
func TestServer_RequestIDsAnsweredAsSent(t *testing.T) {
	ids := []string{
		`0`, `42`, `9223372036854775807`,
		`-1`, `-9223372036854775808`, `-0`, `18446744073709551615`, `1.5`, `1e3`,
		`"a"`, `""`, `"\u0041"`, `"<&>"`, `"é"`, `"\u0000rebound-id:1"`, `"` + strings.Repeat("x", acp.MaxIDBytes-2) + `"`,
		`null`,
	}
	for _, id := range ids {
		t.Run(id[:min(len(id), 24)], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{
					NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
						return acp.NewSessionResponse{SessionID: "s"}, nil
					},
					PromptFunc: func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
						return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
					},
				}
				w := serve(t, t.Context(), agent, acp.Config{})
				for _, req := range []string{
					`{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":1}}`,
					`{"jsonrpc":"2.0","id":` + id + `,"method":"rebound/ping"}`,
					`{"jsonrpc":"2.0","id":` + id + `,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
					`{"method":"session/prompt","params":{"sessionId":"s","prompt":[]},"id":` + id + `,"jsonrpc":"2.0"}`,
				} {
					w.send(req)
					line := w.recv()
					if got := member(t, line, "id"); got != id {
						t.Errorf("request %s\nanswered with id %s: %s", req, got, line)
					}
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

// Concurrent turns with substituted ids each get their own id back.
func TestServer_SubstitutedIDsOfConcurrentTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
		agent := &fakeAgent{PromptFunc: func(_ context.Context, req acp.PromptRequest, _ acp.Client) (acp.PromptResponse, error) {
			<-release[req.SessionID]
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(
			`{"jsonrpc":"2.0","id":-1,"method":"session/prompt","params":{"sessionId":"a","prompt":[]}}`,
			`{"jsonrpc":"2.0","id":"\u0062","method":"session/prompt","params":{"sessionId":"b","prompt":[]}}`,
		)
		synctest.Wait()
		close(release["b"])
		if got := member(t, w.recv(), "id"); got != `"\u0062"` {
			t.Errorf("first reply's id = %s, want \"\\u0062\"", got)
		}
		close(release["a"])
		if got := member(t, w.recv(), "id"); got != `-1` {
			t.Errorf("second reply's id = %s, want -1", got)
		}
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// A request whose id is null is a request (JSON-RPC 2.0; ACP's RequestId
// allows null): it is served and answered with id null, session/cancel
// included.
func TestServer_NullIDIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, _ acp.PromptRequest, _ acp.Client) (acp.PromptResponse, error) {
			<-ctx.Done()
			return acp.PromptResponse{}, ctx.Err()
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		synctest.Wait()
		w.send(`{"jsonrpc":"2.0","id":null,"method":"session/cancel","params":{"sessionId":"s"}}`)
		got := []string{w.recv(), w.recv()} // two goroutines answer: order not fixed
		if strings.Contains(got[0], `"id":1`) {
			got[0], got[1] = got[1], got[0]
		}
		sameJSON(t, "cancel reply", `{"jsonrpc":"2.0","id":null,"result":null}`, got[0])
		sameJSON(t, "prompt reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, got[1])
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// An id of a type JSON-RPC does not allow, or one longer than MaxIDBytes,
// is refused with -32600, id null and a short message that does not echo
// it; the connection goes on.
func TestServer_MalformedIDsRefused(t *testing.T) {
	long := `"` + strings.Repeat("y", 1<<20) + `"`
	tests := []struct{ name, id, wantMsg string }{
		{"object", `{"a":1}`, "Invalid Request: id must be a string, a number or null"},
		{"array", `[1]`, "Invalid Request: id must be a string, a number or null"},
		{"boolean", `true`, "Invalid Request: id must be a string, a number or null"},
		{"long string", long, fmt.Sprintf("Invalid Request: id is %d bytes long; at most %d are accepted", len(long), acp.MaxIDBytes)},
		{"one byte too long", `"` + strings.Repeat("y", acp.MaxIDBytes-1) + `"`, fmt.Sprintf("Invalid Request: id is %d bytes long; at most %d are accepted", acp.MaxIDBytes+1, acp.MaxIDBytes)},
		{"long number", strings.Repeat("9", 300), fmt.Sprintf("Invalid Request: id is 300 bytes long; at most %d are accepted", acp.MaxIDBytes)},
	}
	for _, tt := range tests {
		for _, method := range []string{acp.MethodSessionLoad, acp.MethodInitialize} {
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
					w.send(`{"jsonrpc":"2.0","id":`+tt.id+`,"method":"`+method+`","params":{"sessionId":"s","cwd":"/w","mcpServers":[]}}`, ping)
					line := w.recv()
					code, msg := rpcError(t, line)
					if id := member(t, line, "id"); id != "null" || code != acp.CodeInvalidRequest || msg != tt.wantMsg {
						t.Errorf("reply %.300s\nwant id null, code %d, message %q", line, acp.CodeInvalidRequest, tt.wantMsg)
					}
					sameJSON(t, "next reply", pong, w.recv())
					if err := w.end(); err != nil {
						t.Errorf("Serve() = %v", err)
					}
				})
			})
		}
	}
}

// A response is never answered, even one whose id jsonrpc2 can't read.
func TestServer_UnreadableResponseIsNotAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		w.send(`{"jsonrpc":"2.0","id":-1,"result":{}}`, `{"jsonrpc":"2.0","id":1.5,"error":{"code":1,"message":"x"}}`, ping)
		sameJSON(t, "first output line", pong, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
	})
}

// A session id that no session can have is refused with -32602 before it
// reaches the agent, and the message quotes only a short prefix of it; the
// agent's own internal errors are clipped too.
func TestServer_MalformedSessionIDs(t *testing.T) {
	huge := strings.Repeat("z", 64<<10) // far past every limit; 1 MiB took seconds under -race
	loadParams := func(sid any) map[string]any {
		return map[string]any{"sessionId": sid, "cwd": "/w", "mcpServers": []any{}}
	}
	tests := []struct {
		name, line, wantMsg string
		wantCode            int
	}{
		{"load: long", request(1, acp.MethodSessionLoad, loadParams(huge)), `Invalid params: sessionId "` + strings.Repeat("z", 64) + `…" (65536 bytes) is not a session id (1 to 128 letters, digits, '-' or '_')`, acp.CodeInvalidParams},
		{"load: path", request(1, acp.MethodSessionLoad, loadParams("../../etc/passwd")), `Invalid params: sessionId "../../etc/passwd" is not a session id (1 to 128 letters, digits, '-' or '_')`, acp.CodeInvalidParams},
		{"load: object", request(1, acp.MethodSessionLoad, loadParams(map[string]any{"a": huge})), "Invalid params: sessionId must be a string, not object", acp.CodeInvalidParams},
		{"prompt: long", prompt(1, huge, "hi"), `Invalid params: sessionId "` + strings.Repeat("z", 64) + `…" (65536 bytes) is not a session id (1 to 128 letters, digits, '-' or '_')`, acp.CodeInvalidParams},
		{"cancel request: long", request(1, acp.MethodSessionCancel, map[string]any{"sessionId": huge}), `Invalid params: sessionId "` + strings.Repeat("z", 64) + `…" (65536 bytes) is not a session id (1 to 128 letters, digits, '-' or '_')`, acp.CodeInvalidParams},
		{"cwd: long", request(1, acp.MethodSessionNew, map[string]any{"cwd": huge, "mcpServers": []any{}}), "Invalid params: cwd is longer than 4096 bytes", acp.CodeInvalidParams},
		{"cwd: relative", request(1, acp.MethodSessionNew, map[string]any{"cwd": strings.Repeat("z", 4096), "mcpServers": []any{}}), `Invalid params: cwd must be an absolute path, got "` + strings.Repeat("z", 64) + `…" (4096 bytes)`, acp.CodeInvalidParams},
		{"agent error: long", request(1, acp.MethodSessionLoad, loadParams("s")), "load failed: " + strings.Repeat("z", 1024-len("load failed: ")) + "…", acp.CodeInternalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &fakeAgent{LoadSessionFunc: func(_ context.Context, req acp.LoadSessionRequest, _ acp.Client) (acp.LoadSessionResponse, error) {
					if req.SessionID != "s" {
						t.Errorf("the agent got session id %.40q", req.SessionID)
					}
					return acp.LoadSessionResponse{}, errors.New("load failed: " + huge)
				}}
				w := serve(t, t.Context(), agent, acp.Config{})
				w.send(tt.line)
				line := w.recv()
				code, msg := rpcError(t, line)
				if code != tt.wantCode || msg != tt.wantMsg {
					t.Errorf("reply %.400s\nwant code %d, message %q", line, tt.wantCode, tt.wantMsg)
				}
				if len(line) > 1200 {
					t.Errorf("reply is %d bytes, want a short one", len(line))
				}
				w.send(cancel(huge), ping) // ignored, as a cancel of an unknown session is
				sameJSON(t, "next reply", pong, w.recv())
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

// A refused request's id, when it can be read, comes back byte for byte
// too: json.Marshal would have escaped '&' and '<'.
func TestServer_RefusalKeepsID(t *testing.T) {
	for _, id := range []string{`"&<>"`, `-1`, `1.5`, `"\u0041"`} {
		t.Run(id, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
				w.send(`{"jsonrpc":"2.0","id":` + id + `,"method":5}`)
				line := w.recv()
				if code, _ := rpcError(t, line); member(t, line, "id") != id || code != acp.CodeInvalidRequest {
					t.Errorf("refusal %s, want id %s and code %d", line, id, acp.CodeInvalidRequest)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}
