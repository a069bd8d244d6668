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

// clientCapsCases are initialize's clientCapabilities by whether the client
// shows it reads Rebound's richer messages (RichErrors).
var clientCapsCases = []struct {
	name string
	caps string
	rich bool
}{
	{"none", `{}`, false},
	{"zed", `{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true,"auth":{"terminal":true},"_meta":{"terminal_output":true,"terminal-auth":true}}`, false},
	{"notices", `{"session":{"notices":{}}}`, true},
	{"notices null", `{"session":{"notices":null}}`, false},
	{"meta retry", `{"_meta":{"rebound/retry":true}}`, true},
	{"meta retry object", `{"_meta":{"rebound/retry":{"version":1}}}`, true},
	{"meta retry false", `{"_meta":{"rebound/retry":false}}`, false},
	{"meta retry null", `{"_meta":{"rebound/retry":null}}`, false},
}

// errorKinds are the errors an agent answers with, one of each kind the
// server maps (errors.go's constructors, a failed turn's facts, wrapped).
var errorKinds = []struct {
	name string
	err  error
}{
	{"session not found", acp.NewSessionNotFound("s")},
	{"method not found", acp.NewMethodNotFound("x/y")},
	{"session busy", acp.NewSessionBusy("s")},
	{"session running", acp.NewSessionRunning("s", "session/delete")},
	{"session closing", acp.NewSessionClosing("s")},
	{"invalid params", acp.NewInvalidParams("cwd must be absolute")},
	{"auth required", &acp.RequestError{Code: acp.CodeAuthRequired, Message: "No API key", Data: map[string]any{"authMethods": []any{map[string]any{"id": "api-key", "name": "API key"}}}}},
	{"turn gave up", &acp.RequestError{Code: acp.CodeInternalError, Message: "The provider is overloaded (529); gave up after 2 retries in 1.6s.",
		Data: map[string]any{"failure": map[string]any{"code": "OVERLOADED", "status": 529}, "attempts": 3, "elapsedMs": 1600}}},
	{"wrapped", fmt.Errorf("load: %w", acp.NewSessionNotFound("s"))},
	{"plain", errors.New("disk full")},
	{"cancelled", context.Canceled},
}

// TestServer_ErrorDataByClient: an error's data reaches only a client that
// shows it reads Rebound's richer messages; any other shows data as text
// (Zed appends it, pretty-printed, to the message), so it is sent the code
// and the message alone, unchanged. The log has the data either way.
func TestServer_ErrorDataByClient(t *testing.T) {
	for _, cc := range clientCapsCases {
		for _, kind := range errorKinds {
			t.Run(cc.name+"/"+kind.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					agent := &fakeAgent{NewSessionFunc: func(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
						return acp.NewSessionResponse{}, kind.err
					}}
					w := serveUninitialized(t, t.Context(), agent, acp.Config{})
					w.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":` + cc.caps + `}}`)
					w.recv()
					w.send(request(1, acp.MethodSessionNew, map[string]any{"cwd": "/w", "mcpServers": []any{}}))
					line := w.recv()
					validate(t, line)
					var got struct {
						Error map[string]json.RawMessage `json:"error"`
					}
					if err := json.Unmarshal([]byte(line), &got); err != nil {
						t.Fatal(err)
					}
					var code int
					var msg string
					_ = json.Unmarshal(got.Error["code"], &code)
					_ = json.Unmarshal(got.Error["message"], &msg)
					re, isRE := errors.AsType[*acp.RequestError](kind.err)
					if isRE && (code != re.Code || msg != re.Message) {
						t.Errorf("error = %d %q, want %d %q: only data depends on the client", code, msg, re.Code, re.Message)
					}
					_, hasData := got.Error["data"]
					// auth_required keeps its methods for every client (wireError).
					wantData := (cc.rich || (isRE && re.Code == acp.CodeAuthRequired)) && isRE && re.Data != nil
					if hasData != wantData {
						t.Errorf("data sent = %v, want %v: %s", hasData, wantData, line)
					}
					if wantData {
						want, _ := json.Marshal(re.Data)
						sameJSON(t, "data", string(want), string(got.Error["data"]))
					}
					if isRE && re.Data != nil && !strings.Contains(w.log.String(), `"data":`) {
						t.Errorf("the data is not in the log:\n%s", w.log.String())
					}
					if err := w.end(); err != nil {
						t.Errorf("Serve() = %v", err)
					}
				})
			})
		}
	}
}
