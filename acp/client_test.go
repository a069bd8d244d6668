package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/rebound-agent/rebound/acp"
)

// schemaDefs maps each method the agent sends to the $defs type of its
// params in the official schema.
var schemaDefs = map[string]string{
	acp.MethodSessionUpdate:            "SessionNotification",
	acp.MethodSessionRequestPermission: "RequestPermissionRequest",
	acp.MethodFSReadTextFile:           "ReadTextFileRequest",
	acp.MethodFSWriteTextFile:          "WriteTextFileRequest",
	acp.MethodTerminalCreate:           "CreateTerminalRequest",
	acp.MethodTerminalOutput:           "TerminalOutputRequest",
	acp.MethodTerminalWaitForExit:      "WaitForTerminalExitRequest",
	acp.MethodTerminalKill:             "KillTerminalRequest",
	acp.MethodTerminalRelease:          "ReleaseTerminalRequest",
	acp.MethodCancelRequest:            "CancelRequestNotification",
	acp.MethodElicitationCreate:        "CreateElicitationRequest",
}

type acpSchema struct {
	root   *jsonschema.Schema
	params map[string]*jsonschema.Schema // method → params type
}

// loadSchema compiles testdata/acp-schema/schema.json once per test binary.
var loadSchema = sync.OnceValues(func() (*acpSchema, error) {
	f, err := os.Open(filepath.Join("..", "testdata", "acp-schema", "schema.json"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("acp.json", doc); err != nil {
		return nil, err
	}
	s := &acpSchema{params: map[string]*jsonschema.Schema{}}
	if s.root, err = c.Compile("acp.json"); err != nil {
		return nil, err
	}
	for method, def := range schemaDefs {
		if s.params[method], err = c.Compile("acp.json#/$defs/" + def); err != nil {
			return nil, err
		}
	}
	return s, nil
})

// validate checks an agent message against the official schema: the whole
// line against the root, its params against the type its method names.
func validate(t *testing.T, line string) {
	t.Helper()
	if err := schemaError(line); err != nil {
		t.Errorf("%v\n%s", err, line)
	}
}

func schemaError(line string) error {
	s, err := loadSchema()
	if err != nil {
		return fmt.Errorf("load the ACP schema: %w", err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.root.Validate(v); err != nil {
		return fmt.Errorf("message does not validate against the ACP schema: %w", err)
	}
	msg, _ := v.(map[string]any)
	method, _ := msg["method"].(string)
	if method == "" {
		return nil
	}
	sch := s.params[method]
	if sch == nil {
		return fmt.Errorf("no schema type listed for %s", method)
	}
	if err := sch.Validate(msg["params"]); err != nil {
		return fmt.Errorf("%s params do not validate against $defs/%s: %w", method, schemaDefs[method], err)
	}
	return nil
}

// The validator is not vacuous: messages the schema forbids fail it.
func TestSchema_RejectsInvalidMessages(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/a"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"},"options":[{"optionId":"a","name":"A","kind":"allow"}]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"terminal/create","params":{"sessionId":"s","command":"ls","outputByteLimit":-1}}`,
		`{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t","content":[{"type":"diff","path":"/a"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"done"}}}`,
	} {
		if schemaError(line) == nil {
			t.Errorf("validates, want an error: %s", line)
		}
	}
}

// clientCall is a request the agent sent to the (test) editor.
type clientCall struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// recvValid reads the next line and validates it against the schema.
func (w *wire) recvValid() string {
	w.t.Helper()
	line := w.recv()
	validate(w.t, line)
	return line
}

// recvCall reads the next line, which must be a request to the editor.
func (w *wire) recvCall() clientCall {
	w.t.Helper()
	line := w.recvValid()
	var c clientCall
	if err := json.Unmarshal([]byte(line), &c); err != nil || len(c.ID) == 0 || c.Method == "" {
		w.t.Fatalf("want a request to the editor, got %s", line)
	}
	return c
}

// answer sends the editor's result for id; result is raw JSON.
func (w *wire) answer(id json.RawMessage, result string) {
	w.t.Helper()
	w.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + `}`)
}

func (w *wire) answerError(id json.RawMessage, rpcErr string) {
	w.t.Helper()
	w.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":` + rpcErr + `}`)
}

// allCaps is what an editor advertising fs and terminal sends.
var allCaps = map[string]any{
	"protocolVersion": 1,
	"clientCapabilities": map[string]any{
		"fs":       map[string]any{"readTextFile": true, "writeTextFile": true},
		"terminal": true,
	},
}

// editorTurn is a turn whose agent runs do against the client; res and
// err are do's results, to read after the prompt's reply.
type editorTurn struct {
	*wire
	res any
	err error
}

// startTurn serves with caps advertised (nil: none), then sends a prompt
// whose turn runs do.
func startTurn(t *testing.T, caps any, do func(ctx context.Context, c acp.Client) (any, error)) *editorTurn {
	t.Helper()
	et := &editorTurn{}
	agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
		et.res, et.err = do(ctx, c)
		return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
	}}
	et.wire = serve(t, t.Context(), agent, acp.Config{})
	if caps != nil {
		et.send(request(100, acp.MethodInitialize, caps))
		et.recv()
	}
	et.send(prompt(101, "s", "go"))
	return et
}

// finish reads the turn's reply and ends the connection.
func (et *editorTurn) finish() {
	et.t.Helper()
	sameJSON(et.t, "prompt reply", `{"jsonrpc":"2.0","id":101,"result":{"stopReason":"end_turn"}}`, et.recv())
	if err := et.end(); err != nil {
		et.t.Errorf("Serve() = %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// Each call sends its params exactly per schema and returns the editor's
// decoded result.
func TestClient_Calls(t *testing.T) {
	permission := acp.RequestPermissionRequest{
		SessionID: "s",
		ToolCall: acp.ToolCallUpdate{
			ToolCallID: "call_1",
			Title:      "Write a.go",
			Kind:       acp.ToolKindEdit,
			Status:     acp.ToolStatusPending,
			Content:    []acp.ToolCallContent{acp.ContentDiff("/w/a.go", nil, "package a\n")},
			Locations:  []acp.ToolCallLocation{{Path: "/w/a.go"}},
			RawInput:   json.RawMessage(`{"path":"/w/a.go"}`),
		},
		Options: []acp.PermissionOption{
			{OptionID: "allow", Name: "Allow", Kind: acp.PermissionAllowOnce},
			{OptionID: "always", Name: "Always allow", Kind: acp.PermissionAllowAlways},
			{OptionID: "reject", Name: "Reject", Kind: acp.PermissionRejectOnce},
		},
	}
	const permissionParams = `{"sessionId":"s","toolCall":{"toolCallId":"call_1","title":"Write a.go","kind":"edit","status":"pending",
		"content":[{"type":"diff","path":"/w/a.go","oldText":null,"newText":"package a\n"}],"locations":[{"path":"/w/a.go"}],"rawInput":{"path":"/w/a.go"}},
		"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"always","name":"Always allow","kind":"allow_always"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
	term := acp.TerminalRequest{SessionID: "s", TerminalID: "term-1"}
	const termParams = `{"sessionId":"s","terminalId":"term-1"}`
	tests := []struct {
		name       string
		do         func(context.Context, acp.Client) (any, error)
		wantMethod string
		wantParams string
		result     string
		want       any
	}{
		{"permission selected",
			func(ctx context.Context, c acp.Client) (any, error) { return c.RequestPermission(ctx, permission) },
			acp.MethodSessionRequestPermission, permissionParams,
			`{"outcome":{"outcome":"selected","optionId":"always"}}`,
			acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionSelected, OptionID: "always"}}},
		{"permission cancelled",
			func(ctx context.Context, c acp.Client) (any, error) { return c.RequestPermission(ctx, permission) },
			acp.MethodSessionRequestPermission, permissionParams,
			`{"outcome":{"outcome":"cancelled"},"_meta":{"x":1}}`,
			acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionCancelled}, Meta: acp.Meta{"x": 1.0}}},
		{"read a whole file",
			func(ctx context.Context, c acp.Client) (any, error) {
				return c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a.go"})
			},
			acp.MethodFSReadTextFile, `{"sessionId":"s","path":"/w/a.go"}`,
			`{"content":"package a\n"}`,
			acp.ReadTextFileResponse{Content: "package a\n"}},
		{"read lines",
			func(ctx context.Context, c acp.Client) (any, error) {
				return c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a.go", Line: ptr(10), Limit: ptr(0)})
			},
			acp.MethodFSReadTextFile, `{"sessionId":"s","path":"/w/a.go","line":10,"limit":0}`,
			`{"content":""}`,
			acp.ReadTextFileResponse{}},
		{"write",
			func(ctx context.Context, c acp.Client) (any, error) {
				return nil, c.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionID: "s", Path: "/w/new.go", Content: ""})
			},
			acp.MethodFSWriteTextFile, `{"sessionId":"s","path":"/w/new.go","content":""}`,
			`{}`, nil},
		{"write answered null",
			func(ctx context.Context, c acp.Client) (any, error) {
				return nil, c.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionID: "s", Path: "/w/a.go", Content: "x"})
			},
			acp.MethodFSWriteTextFile, `{"sessionId":"s","path":"/w/a.go","content":"x"}`,
			`null`, nil},
		{"create terminal",
			func(ctx context.Context, c acp.Client) (any, error) {
				return c.CreateTerminal(ctx, acp.CreateTerminalRequest{
					SessionID: "s", Command: "go", Args: []string{"test", "./..."},
					Env: []acp.EnvVariable{{Name: "CGO_ENABLED", Value: "0"}}, Cwd: "/w", OutputByteLimit: ptr[int64](1 << 20),
				})
			},
			acp.MethodTerminalCreate,
			`{"sessionId":"s","command":"go","args":["test","./..."],"env":[{"name":"CGO_ENABLED","value":"0"}],"cwd":"/w","outputByteLimit":1048576}`,
			`{"terminalId":"term-1"}`,
			acp.CreateTerminalResponse{TerminalID: "term-1"}},
		{"create terminal, command only",
			func(ctx context.Context, c acp.Client) (any, error) {
				return c.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionID: "s", Command: "ls"})
			},
			acp.MethodTerminalCreate, `{"sessionId":"s","command":"ls"}`,
			`{"terminalId":"term-2"}`,
			acp.CreateTerminalResponse{TerminalID: "term-2"}},
		{"output while running",
			func(ctx context.Context, c acp.Client) (any, error) { return c.TerminalOutput(ctx, term) },
			acp.MethodTerminalOutput, termParams,
			`{"output":"ok\n","truncated":true,"exitStatus":null}`,
			acp.TerminalOutputResponse{Output: "ok\n", Truncated: true}},
		{"output after exit",
			func(ctx context.Context, c acp.Client) (any, error) { return c.TerminalOutput(ctx, term) },
			acp.MethodTerminalOutput, termParams,
			`{"output":"","truncated":false,"exitStatus":{"exitCode":0,"signal":null}}`,
			acp.TerminalOutputResponse{ExitStatus: &acp.TerminalExitStatus{ExitCode: ptr(0)}}},
		{"wait for exit",
			func(ctx context.Context, c acp.Client) (any, error) { return c.WaitForTerminalExit(ctx, term) },
			acp.MethodTerminalWaitForExit, termParams,
			`{"exitCode":null,"signal":"SIGKILL"}`,
			acp.TerminalExitStatus{Signal: ptr("SIGKILL")}},
		{"kill",
			func(ctx context.Context, c acp.Client) (any, error) { return nil, c.KillTerminal(ctx, term) },
			acp.MethodTerminalKill, termParams, `{}`, nil},
		{"release",
			func(ctx context.Context, c acp.Client) (any, error) { return nil, c.ReleaseTerminal(ctx, term) },
			acp.MethodTerminalRelease, termParams, `{"_meta":null}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := startTurn(t, allCaps, tt.do)
				c := w.recvCall()
				if c.Method != tt.wantMethod || string(c.ID) != "1" {
					t.Errorf("request = %s id %s, want %s id 1", c.Method, c.ID, tt.wantMethod)
				}
				sameJSON(t, "params", tt.wantParams, string(c.Params))
				w.answer(c.ID, tt.result)
				w.finish()
				if w.err != nil {
					t.Fatalf("call failed: %v", w.err)
				}
				if diff := cmp.Diff(tt.want, w.res); diff != "" {
					t.Errorf("result (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// Calls in one session get increasing ids and may overlap; each answer
// goes to its own caller whatever the order.
func TestClient_ConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startTurn(t, allCaps, func(ctx context.Context, c acp.Client) (any, error) {
			got := make([]string, 2)
			var wg sync.WaitGroup
			for i, path := range []string{"/w/a", "/w/b"} {
				wg.Go(func() {
					r, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: path})
					if err != nil {
						t.Errorf("read %s: %v", path, err)
					}
					got[i] = r.Content
				})
			}
			wg.Wait()
			return got, nil
		})
		calls := map[string]json.RawMessage{}
		for range 2 {
			c := w.recvCall()
			var p acp.ReadTextFileRequest
			if err := json.Unmarshal(c.Params, &p); err != nil {
				t.Fatal(err)
			}
			calls[p.Path] = c.ID
		}
		if string(calls["/w/a"]) == string(calls["/w/b"]) {
			t.Errorf("both calls have id %s", calls["/w/a"])
		}
		w.answer(calls["/w/b"], `{"content":"B"}`)
		w.answer(calls["/w/a"], `{"content":"A"}`)
		w.finish()
		if diff := cmp.Diff([]string{"A", "B"}, w.res); diff != "" {
			t.Errorf("contents (-want +got):\n%s", diff)
		}
	})
}

// An error answer is a *ClientError carrying the editor's code, message
// and data, worded for the model.
func TestClient_ErrorAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startTurn(t, allCaps, func(ctx context.Context, c acp.Client) (any, error) {
			return c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/gone.go"})
		})
		c := w.recvCall()
		w.answerError(c.ID, `{"code":-32002,"message":"Resource not found: /w/gone.go","data":{"uri":"file:///w/gone.go"}}`)
		w.finish()
		ce, ok := errors.AsType[*acp.ClientError](w.err)
		if !ok {
			t.Fatalf("error = %#v, want a *acp.ClientError", w.err)
		}
		want := &acp.ClientError{Method: acp.MethodFSReadTextFile, Code: -32002, Message: "Resource not found: /w/gone.go",
			Data: json.RawMessage(`{"uri":"file:///w/gone.go"}`)}
		if diff := cmp.Diff(want, ce); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		const wantMsg = "the editor refused fs/read_text_file: Resource not found: /w/gone.go (code -32002)"
		if w.err.Error() != wantMsg {
			t.Errorf("Error() = %q, want %q", w.err.Error(), wantMsg)
		}
		if errors.Is(w.err, acp.ErrInvalidResult) {
			t.Error("an error answer matches ErrInvalidResult")
		}
	})
}

// A result that doesn't decode, or lacks what the method requires, is a
// *ClientError wrapping ErrInvalidResult, never a panic or a zero value.
func TestClient_InvalidResult(t *testing.T) {
	permission := func(ctx context.Context, c acp.Client) (any, error) {
		return c.RequestPermission(ctx, acp.RequestPermissionRequest{
			SessionID: "s", ToolCall: acp.ToolCallUpdate{ToolCallID: "call_1"},
			Options: []acp.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: acp.PermissionAllowOnce}},
		})
	}
	read := func(ctx context.Context, c acp.Client) (any, error) {
		return c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a"})
	}
	term := acp.TerminalRequest{SessionID: "s", TerminalID: "t"}
	tests := []struct {
		name    string
		do      func(context.Context, acp.Client) (any, error)
		result  string
		wantMsg string
	}{
		{"selected without optionId", permission, `{"outcome":{"outcome":"selected"}}`,
			"outcome.optionId is required when the outcome is selected"},
		{"selected an option not offered", permission, `{"outcome":{"outcome":"selected","optionId":"always"}}`,
			`outcome.optionId "always" is not one of the options offered`},
		{"unknown outcome", permission, `{"outcome":{"outcome":"maybe"}}`,
			`outcome.outcome must be "cancelled" or "selected", not "maybe"`},
		{"no outcome", permission, `{}`, "outcome.outcome is required"},
		{"outcome not an object", permission, `{"outcome":"selected"}`, "outcome must be an object, not string"},
		{"permission result a string", permission, `"allow"`, "the result must be an object, not string"},
		{"read without content", read, `{}`, "content is required"},
		{"read content a number", read, `{"content":5}`, "content must be a string, not number"},
		{"read result null", read, `null`, "the result must be an object, not null"},
		{"create without terminalId", func(ctx context.Context, c acp.Client) (any, error) {
			return c.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionID: "s", Command: "ls"})
		}, `{"terminalId":""}`, "terminalId is required"},
		{"output without truncated", func(ctx context.Context, c acp.Client) (any, error) {
			return c.TerminalOutput(ctx, term)
		}, `{"output":"x"}`, "truncated is required"},
		{"exit code a string", func(ctx context.Context, c acp.Client) (any, error) {
			return c.TerminalOutput(ctx, term)
		}, `{"output":"x","truncated":false,"exitStatus":{"exitCode":"1"}}`, "exitStatus.exitCode must be an integer, not string"},
		{"wait result an array", func(ctx context.Context, c acp.Client) (any, error) {
			return c.WaitForTerminalExit(ctx, term)
		}, `[]`, "the result must be an object, not array"},
		{"kill result a string", func(ctx context.Context, c acp.Client) (any, error) {
			return nil, c.KillTerminal(ctx, term)
		}, `"ok"`, "the result must be an object, not string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := startTurn(t, allCaps, tt.do)
				c := w.recvCall()
				w.answer(c.ID, tt.result)
				w.finish()
				ce, ok := errors.AsType[*acp.ClientError](w.err)
				if !ok || !errors.Is(w.err, acp.ErrInvalidResult) {
					t.Fatalf("error = %v, want a *acp.ClientError wrapping ErrInvalidResult", w.err)
				}
				if ce.Method != c.Method || ce.Message != tt.wantMsg {
					t.Errorf("error = %s: %q, want %s: %q", ce.Method, ce.Message, c.Method, tt.wantMsg)
				}
				if want := "the editor answered " + c.Method + " with an invalid result: " + tt.wantMsg; w.err.Error() != want {
					t.Errorf("Error() = %q, want %q", w.err.Error(), want)
				}
			})
		})
	}
}

// session/cancel while a call waits: the call sends $/cancel_request with
// its id and returns at once with the cancel cause; the editor's late
// answer is dropped without a trace.
func TestClient_CancelSendsCancelRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			took time.Duration
			err  error
		)
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			start := time.Now()
			_, err = c.RequestPermission(ctx, acp.RequestPermissionRequest{
				SessionID: "s", ToolCall: acp.ToolCallUpdate{ToolCallID: "call_1"},
				Options: []acp.PermissionOption{{OptionID: "allow", Name: "Allow", Kind: acp.PermissionAllowOnce}},
			})
			took = time.Since(start)
			return acp.PromptResponse{}, err
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "go"))
		c := w.recvCall()
		time.Sleep(3 * time.Second) // the user thinks
		w.send(cancel("s"))
		sameJSON(t, "cancel request", `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`+string(c.ID)+`}}`, w.recvValid())
		sameJSON(t, "prompt reply", `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`, w.recv())
		if !errors.Is(err, acp.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want one matching ErrCancelled and context.Canceled", err)
		}
		if _, ok := errors.AsType[*acp.ClientError](err); ok {
			t.Errorf("error = %v, a *ClientError; want a cancellation", err)
		}
		if took != 3*time.Second {
			t.Errorf("the call returned after %v, want 3s (at the cancel)", took)
		}
		// The editor answers late, as the spec tells it to: dropped.
		w.answer(c.ID, `{"outcome":{"outcome":"cancelled"}}`)
		w.send(ping)
		sameJSON(t, "next reply", pong, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		if log := w.log.String(); strings.Contains(log, "ignoring response") || strings.Contains(log, `"level":"warn"`) {
			t.Errorf("the late answer was logged as a problem:\n%s", log)
		}
	})
}

// A deadline the agent sets works the same way, and the turn goes on: a
// timed-out wait for a terminal is followed by a kill.
func TestClient_DeadlineSendsCancelRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		term := acp.TerminalRequest{SessionID: "s", TerminalID: "t"}
		var waitErr, killErr error
		agent := &fakeAgent{PromptFunc: func(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, waitErr = c.WaitForTerminalExit(wctx, term)
			killErr = c.KillTerminal(ctx, term)
			return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(request(1, acp.MethodInitialize, allCaps))
		w.recv()
		start := time.Now()
		w.send(prompt(2, "s", "go"))
		wait := w.recvCall()
		sameJSON(t, "cancel request", `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":`+string(wait.ID)+`}}`, w.recvValid())
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("$/cancel_request after %v, want 5s", got)
		}
		kill := w.recvCall()
		if kill.Method != acp.MethodTerminalKill || string(kill.ID) == string(wait.ID) {
			t.Errorf("next request = %s id %s, want %s with a new id", kill.Method, kill.ID, acp.MethodTerminalKill)
		}
		w.answerError(wait.ID, `{"code":-32800,"message":"Request cancelled"}`) // late, dropped
		w.answer(kill.ID, `{}`)
		sameJSON(t, "prompt reply", `{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`, w.recv())
		if err := w.end(); err != nil {
			t.Errorf("Serve() = %v", err)
		}
		if !errors.Is(waitErr, context.DeadlineExceeded) {
			t.Errorf("wait error = %v, want DeadlineExceeded", waitErr)
		}
		if killErr != nil {
			t.Errorf("kill error = %v", killErr)
		}
		if log := w.log.String(); strings.Contains(log, "ignoring response") {
			t.Errorf("the late answer was logged:\n%s", log)
		}
	})
}

// With ctx already done nothing is sent: there is nothing to cancel.
func TestClient_CancelledBeforeSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errStop := errors.New("stop")
		w := startTurn(t, allCaps, func(ctx context.Context, c acp.Client) (any, error) {
			ctx, cancel := context.WithCancelCause(ctx)
			cancel(errStop)
			return c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a"})
		})
		w.finish() // the reply is the next line: no request, no $/cancel_request
		if !errors.Is(w.err, errStop) || !errors.Is(w.err, context.Canceled) {
			t.Errorf("error = %v, want one matching the cause and context.Canceled", w.err)
		}
	})
}

// A call the editor did not advertise is not sent. Permission needs no
// capability.
func TestClient_Unsupported(t *testing.T) {
	term := acp.TerminalRequest{SessionID: "s", TerminalID: "t"}
	calls := map[string]func(context.Context, acp.Client) error{
		acp.MethodFSReadTextFile: func(ctx context.Context, c acp.Client) error {
			_, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a"})
			return err
		},
		acp.MethodFSWriteTextFile: func(ctx context.Context, c acp.Client) error {
			return c.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionID: "s", Path: "/w/a"})
		},
		acp.MethodTerminalCreate: func(ctx context.Context, c acp.Client) error {
			_, err := c.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionID: "s", Command: "ls"})
			return err
		},
		acp.MethodTerminalOutput: func(ctx context.Context, c acp.Client) error {
			_, err := c.TerminalOutput(ctx, term)
			return err
		},
		acp.MethodTerminalWaitForExit: func(ctx context.Context, c acp.Client) error {
			_, err := c.WaitForTerminalExit(ctx, term)
			return err
		},
		acp.MethodTerminalKill:    func(ctx context.Context, c acp.Client) error { return c.KillTerminal(ctx, term) },
		acp.MethodTerminalRelease: func(ctx context.Context, c acp.Client) error { return c.ReleaseTerminal(ctx, term) },
	}
	for method, do := range calls {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Everything but what the call needs is advertised.
				caps := map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
					"fs": map[string]any{"readTextFile": true}}}
				if method == acp.MethodFSReadTextFile {
					caps = map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
						"fs": map[string]any{"writeTextFile": true}, "terminal": true}}
				}
				w := startTurn(t, caps, func(ctx context.Context, c acp.Client) (any, error) { return nil, do(ctx, c) })
				w.finish()
				if !errors.Is(w.err, acp.ErrUnsupported) || !strings.HasPrefix(w.err.Error(), method+" not sent") {
					t.Errorf("error = %v, want %s not sent: ErrUnsupported", w.err, method)
				}
			})
		})
	}
}

// Params the schema would reject are the agent's bug: not sent.
func TestClient_BadParamsNotSent(t *testing.T) {
	allow := []acp.PermissionOption{{OptionID: "a", Name: "Allow", Kind: acp.PermissionAllowOnce}}
	tests := []struct {
		name    string
		do      func(context.Context, acp.Client) error
		wantErr string
	}{
		{"relative path", func(ctx context.Context, c acp.Client) error {
			_, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "a.go"})
			return err
		}, `fs/read_text_file not sent: invalid params: path must be absolute, got "a.go"`},
		{"line 0", func(ctx context.Context, c acp.Client) error {
			_, err := c.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionID: "s", Path: "/a", Line: ptr(0)})
			return err
		}, `fs/read_text_file not sent: invalid params: line is 1-based, got 0`},
		{"no session", func(ctx context.Context, c acp.Client) error {
			return c.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: "/a"})
		}, `fs/write_text_file not sent: invalid params: sessionId is required`},
		{"no options", func(ctx context.Context, c acp.Client) error {
			_, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: "s", ToolCall: acp.ToolCallUpdate{ToolCallID: "c"}})
			return err
		}, `session/request_permission not sent: invalid params: options must offer at least one choice`},
		{"no tool call id", func(ctx context.Context, c acp.Client) error {
			_, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: "s", Options: allow})
			return err
		}, `session/request_permission not sent: invalid params: toolCall.toolCallId is required`},
		{"bad option kind", func(ctx context.Context, c acp.Client) error {
			_, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: "s", ToolCall: acp.ToolCallUpdate{ToolCallID: "c"},
				Options: []acp.PermissionOption{{OptionID: "a", Name: "A", Kind: "allow"}}})
			return err
		}, `session/request_permission not sent: invalid params: options[0].kind "allow" is not allow_once, allow_always, reject_once or reject_always`},
		{"bad tool content", func(ctx context.Context, c acp.Client) error {
			_, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{SessionID: "s", Options: allow,
				ToolCall: acp.ToolCallUpdate{ToolCallID: "c", Content: []acp.ToolCallContent{{Type: "image"}}}})
			return err
		}, `send session/request_permission: json: error calling MarshalJSON for type acp.ToolCallContent: acp: tool call content type "image" is not content, diff or terminal`},
		{"relative cwd", func(ctx context.Context, c acp.Client) error {
			_, err := c.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionID: "s", Command: "ls", Cwd: "w"})
			return err
		}, `terminal/create not sent: invalid params: cwd must be absolute, got "w"`},
		{"no terminal id", func(ctx context.Context, c acp.Client) error {
			return c.ReleaseTerminal(ctx, acp.TerminalRequest{SessionID: "s"})
		}, `terminal/release not sent: invalid params: terminalId is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := startTurn(t, allCaps, func(ctx context.Context, c acp.Client) (any, error) { return nil, tt.do(ctx, c) })
				w.finish()
				if w.err == nil || w.err.Error() != tt.wantErr {
					t.Errorf("error = %v, want %s", w.err, tt.wantErr)
				}
			})
		})
	}
}

// A call on a closed connection fails with jsonrpc2.ErrClosed.
func TestClient_ConnectionClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var kept acp.Client
		w := startTurn(t, allCaps, func(ctx context.Context, c acp.Client) (any, error) {
			kept = c
			return nil, nil
		})
		w.finish()
		_, err := kept.ReadTextFile(t.Context(), acp.ReadTextFileRequest{SessionID: "s", Path: "/w/a"})
		if !errors.Is(err, jsonrpc2.ErrClosed) {
			t.Errorf("error = %v, want one wrapping jsonrpc2.ErrClosed", err)
		}
	})
}

// Tool call updates of every content kind go out valid per schema.
func TestClient_ToolCallUpdates(t *testing.T) {
	old := "package a\n"
	updates := []acp.SessionUpdate{
		{SessionUpdate: acp.UpdateToolCall, ToolCallID: "c1", Title: "Read a.go", Kind: acp.ToolKindRead, Status: acp.ToolStatusPending,
			Locations: []acp.ToolCallLocation{{Path: "/w/a.go", Line: ptr(3)}}, RawInput: json.RawMessage(`{"path":"/w/a.go"}`)},
		{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "c1", Status: acp.ToolStatusCompleted,
			ToolContent: []acp.ToolCallContent{acp.ContentText("3 lines")}, RawOutput: json.RawMessage(`"package a"`)},
		{SessionUpdate: acp.UpdateToolCall, ToolCallID: "c2", Title: "Create b.go", Name: "write_file", Kind: acp.ToolKindEdit,
			ToolContent: []acp.ToolCallContent{acp.ContentDiff("/w/b.go", nil, "")}},
		{SessionUpdate: acp.UpdateToolCall, ToolCallID: "c3", Title: "Edit a.go", Kind: acp.ToolKindEdit, Status: acp.ToolStatusInProgress,
			ToolContent: []acp.ToolCallContent{acp.ContentDiff("/w/a.go", &old, "package b\n")}, Locations: []acp.ToolCallLocation{{Path: "/w/a.go"}}},
		{SessionUpdate: acp.UpdateToolCall, ToolCallID: "c4", Kind: acp.ToolKindExecute,
			ToolContent: []acp.ToolCallContent{acp.ContentTerminal("term-1")}},
		{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "c4", Status: acp.ToolStatusFailed, Title: "go test (failed)",
			ToolContent: []acp.ToolCallContent{}, Locations: []acp.ToolCallLocation{}},
		acp.ToolCallUpdate{ToolCallID: "c5", Status: acp.ToolStatusCompleted, Content: []acp.ToolCallContent{acp.ContentText("done")}}.AsUpdate(),
	}
	want := []string{
		`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Read a.go","kind":"read","status":"pending","locations":[{"path":"/w/a.go","line":3}],"rawInput":{"path":"/w/a.go"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","content":[{"type":"content","content":{"type":"text","text":"3 lines"}}],"status":"completed","rawOutput":"package a"}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c2","content":[{"type":"diff","path":"/w/b.go","oldText":null,"newText":""}],"title":"Create b.go","name":"write_file","kind":"edit"}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c3","content":[{"type":"diff","path":"/w/a.go","oldText":"package a\n","newText":"package b\n"}],"title":"Edit a.go","kind":"edit","status":"in_progress","locations":[{"path":"/w/a.go"}]}`,
		`{"sessionUpdate":"tool_call","toolCallId":"c4","content":[{"type":"terminal","terminalId":"term-1"}],"title":"","kind":"execute"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c4","content":[],"title":"go test (failed)","status":"failed","locations":[]}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c5","content":[{"type":"content","content":{"type":"text","text":"done"}}],"status":"completed"}`,
	}
	synctest.Test(t, func(t *testing.T) {
		w := startTurn(t, nil, func(ctx context.Context, c acp.Client) (any, error) {
			for _, u := range updates {
				if err := c.Update(ctx, "s", u); err != nil {
					return nil, err
				}
			}
			return nil, nil
		})
		for i, u := range want {
			sameJSON(t, updates[i].SessionUpdate, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":`+u+`}}`, w.recvValid())
		}
		w.finish()
		if w.err != nil {
			t.Error(w.err)
		}
	})
}

// SessionUpdate writes "content" from whichever of Content and ToolContent
// is set, keeps the wire form of the older kinds byte for byte, and reads
// back what it wrote.
func TestSessionUpdate_JSON(t *testing.T) {
	text := acp.TextBlock("hi")
	tests := []struct {
		name string
		u    acp.SessionUpdate
		want string
	}{
		{"chunk", acp.SessionUpdate{SessionUpdate: acp.UpdateAgentMessageChunk, Content: &text, MessageID: "m1"},
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"messageId":"m1"}`},
		{"notice", acp.SessionUpdate{SessionUpdate: acp.UpdateNotice, Severity: "warning", Title: "Retrying", Meta: acp.Meta{"k": "v"}},
			`{"sessionUpdate":"notice","severity":"warning","title":"Retrying","_meta":{"k":"v"}}`},
		{"compaction", acp.SessionUpdate{SessionUpdate: acp.UpdateCompaction, CompactionID: "c", Status: "completed", Summary: []acp.ContentBlock{text}},
			`{"sessionUpdate":"compaction_update","compactionId":"c","status":"completed","summary":[{"type":"text","text":"hi"}]}`},
		{"session info", acp.SessionUpdate{SessionUpdate: acp.UpdateSessionInfo},
			`{"sessionUpdate":"session_info_update"}`},
		{"tool call", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", ToolContent: []acp.ToolCallContent{acp.ContentText("x")}},
			`{"sessionUpdate":"tool_call","toolCallId":"t","content":[{"type":"content","content":{"type":"text","text":"x"}}],"title":""}`},
		{"tool call update clearing content", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, ToolCallID: "t", ToolContent: []acp.ToolCallContent{}},
			`{"sessionUpdate":"tool_call_update","toolCallId":"t","content":[]}`},
		{"usage, nothing used yet", acp.SessionUpdate{SessionUpdate: acp.UpdateUsage},
			`{"sessionUpdate":"usage_update","used":0,"size":0}`},
		{"usage with cost", acp.SessionUpdate{SessionUpdate: acp.UpdateUsage, Used: 1230, Size: 128000, Cost: &acp.Cost{Amount: 0.0125, Currency: "USD"}},
			`{"sessionUpdate":"usage_update","used":1230,"size":128000,"cost":{"amount":0.0125,"currency":"USD"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("Marshal:\n got %s\nwant %s", b, tt.want)
			}
			if tt.u.SessionUpdate == acp.UpdateUsage {
				validate(t, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":`+string(b)+`}}`)
			}
			var back acp.SessionUpdate
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.u, back); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSessionUpdate_MarshalErrors(t *testing.T) {
	text := acp.TextBlock("hi")
	tests := []struct {
		name    string
		u       acp.SessionUpdate
		wantErr string
	}{
		{"both contents", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", Content: &text, ToolContent: []acp.ToolCallContent{}},
			`both Content and ToolContent`},
		{"tool call without id", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCallUpdate, Status: acp.ToolStatusCompleted},
			`tool_call_update update needs ToolCallID`},
		{"content without block", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", ToolContent: []acp.ToolCallContent{{Type: "content"}}},
			`needs Content`},
		{"diff without path", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", ToolContent: []acp.ToolCallContent{acp.ContentDiff("", nil, "x")}},
			`needs Path`},
		{"terminal without id", acp.SessionUpdate{SessionUpdate: acp.UpdateToolCall, ToolCallID: "t", ToolContent: []acp.ToolCallContent{acp.ContentTerminal("")}},
			`needs TerminalID`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := json.Marshal(tt.u); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Marshal error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
