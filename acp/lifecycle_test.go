package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// lifecycleAgent is a fakeAgent that also serves the optional session
// methods.
type lifecycleAgent struct {
	fakeAgent
	ListFunc   func(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error)
	ResumeFunc func(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error)
	CloseFunc  func(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error)
	DeleteFunc func(context.Context, acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error)
}

var (
	_ acp.SessionLister  = (*lifecycleAgent)(nil)
	_ acp.SessionResumer = (*lifecycleAgent)(nil)
	_ acp.SessionCloser  = (*lifecycleAgent)(nil)
	_ acp.SessionDeleter = (*lifecycleAgent)(nil)
)

func (a *lifecycleAgent) ListSessions(ctx context.Context, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	if a.ListFunc == nil {
		return acp.ListSessionsResponse{}, errors.New("lifecycleAgent: unexpected ListSessions")
	}
	return a.ListFunc(ctx, req)
}

func (a *lifecycleAgent) ResumeSession(ctx context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	if a.ResumeFunc == nil {
		return acp.ResumeSessionResponse{}, errors.New("lifecycleAgent: unexpected ResumeSession")
	}
	return a.ResumeFunc(ctx, req)
}

func (a *lifecycleAgent) CloseSession(ctx context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	if a.CloseFunc == nil {
		return acp.CloseSessionResponse{}, errors.New("lifecycleAgent: unexpected CloseSession")
	}
	return a.CloseFunc(ctx, req)
}

func (a *lifecycleAgent) DeleteSession(ctx context.Context, req acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	if a.DeleteFunc == nil {
		return acp.DeleteSessionResponse{}, errors.New("lifecycleAgent: unexpected DeleteSession")
	}
	return a.DeleteFunc(ctx, req)
}

// An agent that serves the optional methods has them advertised; one that
// does not has them answered -32601 (TestServer_Initialize pins that it
// advertises none).
func TestServer_SessionCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &lifecycleAgent{}, acp.Config{Version: "1"})
		w.send(request(1, acp.MethodInitialize, map[string]any{"protocolVersion": 1}))
		sameJSON(t, "initialize", `{"id":1,"jsonrpc":"2.0","result":{"protocolVersion":1,"agentCapabilities":{
			"loadSession":true,"promptCapabilities":{"image":true,"audio":false,"embeddedContext":true},
			"sessionCapabilities":{"list":{},"resume":{},"close":{},"delete":{},"additionalDirectories":{}}},
			"authMethods":[],"agentInfo":{"name":"rebound","version":"1"}}}`, w.recv())
		if err := w.end(); err != nil {
			t.Error(err)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		w := serve(t, t.Context(), &fakeAgent{}, acp.Config{})
		for i, m := range []string{acp.MethodSessionList, acp.MethodSessionResume, acp.MethodSessionClose, acp.MethodSessionDelete} {
			w.send(request(i, m, map[string]any{"sessionId": "s", "cwd": "/w"}))
			if got := w.recv(); !strings.Contains(got, `"code":-32601`) {
				t.Errorf("%s on an agent without it: %s, want -32601", m, got)
			}
		}
		if err := w.end(); err != nil {
			t.Error(err)
		}
	})
}

// session/close cancels the running turn, which is answered cancelled,
// and only then asks the agent to close the session.
func TestServer_CloseCancelsTheRunningTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var events []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, s)
		}
		agent := &lifecycleAgent{
			fakeAgent: fakeAgent{PromptFunc: func(ctx context.Context, _ acp.PromptRequest, _ acp.Client) (acp.PromptResponse, error) {
				<-ctx.Done()
				if !errors.Is(context.Cause(ctx), acp.ErrSessionClosed) {
					t.Errorf("the turn's cancel cause is %v, want ErrSessionClosed", context.Cause(ctx))
				}
				note("turn ended")
				return acp.PromptResponse{}, ctx.Err() // an error: still answered cancelled
			}},
			CloseFunc: func(_ context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
				note("closed " + req.SessionID)
				return acp.CloseSessionResponse{}, nil
			},
		}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "long"))
		synctest.Wait()
		w.send(request(2, acp.MethodSessionClose, map[string]any{"sessionId": "s"}))
		sameJSON(t, "prompt reply", `{"id":1,"jsonrpc":"2.0","result":{"stopReason":"cancelled"}}`, w.recv())
		sameJSON(t, "close reply", `{"id":2,"jsonrpc":"2.0","result":{}}`, w.recv())
		if err := w.end(); err != nil {
			t.Error(err)
		}
		if got := strings.Join(events, ", "); got != "turn ended, closed s" {
			t.Errorf("order: %s, want the turn to end before the session closes", got)
		}
	})
}

// While session/close or session/delete runs, a prompt for the session is
// refused; other sessions are not held up.
func TestServer_PromptWhileClosing(t *testing.T) {
	for _, method := range []string{acp.MethodSessionClose, acp.MethodSessionDelete} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				agent := &lifecycleAgent{
					fakeAgent: fakeAgent{PromptFunc: func(context.Context, acp.PromptRequest, acp.Client) (acp.PromptResponse, error) {
						return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
					}},
					CloseFunc: func(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
						<-release
						return acp.CloseSessionResponse{}, nil
					},
					DeleteFunc: func(context.Context, acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
						<-release
						return acp.DeleteSessionResponse{}, nil
					},
				}
				w := serve(t, t.Context(), agent, acp.Config{})
				w.send(request(1, method, map[string]any{"sessionId": "s"}))
				synctest.Wait()
				w.send(prompt(2, "s", "now?"))
				sameJSON(t, "prompt reply", `{"id":2,"jsonrpc":"2.0","error":{"code":-32002,
					"message":"Session s is being closed; load or resume it to go on","data":{"sessionId":"s","reason":"session_closing"}}}`, w.recv())
				w.send(prompt(3, "other", "fine"))
				sameJSON(t, "other session", `{"id":3,"jsonrpc":"2.0","result":{"stopReason":"end_turn"}}`, w.recv())
				close(release)
				sameJSON(t, "reply", `{"id":1,"jsonrpc":"2.0","result":{}}`, w.recv())
				w.send(prompt(4, "s", "after"))
				sameJSON(t, "prompt after", `{"id":4,"jsonrpc":"2.0","result":{"stopReason":"end_turn"}}`, w.recv())
				if err := w.end(); err != nil {
					t.Error(err)
				}
			})
		})
	}
}

// session/delete is refused while a turn of the session runs, without
// reaching the agent.
func TestServer_DeleteWhileATurnRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deleted := 0
		agent := &lifecycleAgent{
			fakeAgent: fakeAgent{PromptFunc: func(ctx context.Context, _ acp.PromptRequest, _ acp.Client) (acp.PromptResponse, error) {
				<-ctx.Done()
				return acp.PromptResponse{StopReason: acp.StopCancelled}, nil
			}},
			DeleteFunc: func(context.Context, acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
				deleted++
				return acp.DeleteSessionResponse{}, nil
			},
		}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(prompt(1, "s", "long"))
		synctest.Wait()
		w.send(request(2, acp.MethodSessionDelete, map[string]any{"sessionId": "s"}))
		sameJSON(t, "delete while running", `{"id":2,"jsonrpc":"2.0","error":{"code":-32003,
			"message":"A turn is running in session s; session/delete needs it to end first: send session/cancel and wait for the prompt's reply, or use session/close",
			"data":{"sessionId":"s","reason":"session_busy"}}}`, w.recv())
		w.send(cancel("s"))
		sameJSON(t, "prompt reply", `{"id":1,"jsonrpc":"2.0","result":{"stopReason":"cancelled"}}`, w.recv())
		synctest.Wait()
		w.send(request(3, acp.MethodSessionDelete, map[string]any{"sessionId": "s"}))
		sameJSON(t, "delete after", `{"id":3,"jsonrpc":"2.0","result":{}}`, w.recv())
		if err := w.end(); err != nil {
			t.Error(err)
		}
		if deleted != 1 {
			t.Errorf("DeleteSession called %d times, want 1", deleted)
		}
	})
}

// Params are checked before they reach the agent.
func TestServer_LifecycleParams(t *testing.T) {
	tests := []struct {
		name, line, wantMessage string
	}{
		{"list relative cwd", request(1, acp.MethodSessionList, map[string]any{"cwd": "w"}), `Invalid params: cwd must be an absolute path, got "w"`},
		{"list bad cwd type", request(1, acp.MethodSessionList, map[string]any{"cwd": 5}), "Invalid params: cwd must be a string, not number"},
		{"resume without cwd", request(1, acp.MethodSessionResume, map[string]any{"sessionId": "s"}), "Invalid params: cwd is required"},
		{"resume bad id", request(1, acp.MethodSessionResume, map[string]any{"sessionId": "../s", "cwd": "/w"}), `Invalid params: sessionId "../s" is not a session id (1 to 128 letters, digits, '-' or '_')`},
		{"close without params", request(1, acp.MethodSessionClose, nil), "Invalid params: params are required"},
		{"delete without id", request(1, acp.MethodSessionDelete, map[string]any{}), "Invalid params: sessionId is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &lifecycleAgent{}, acp.Config{})
				w.send(tt.line)
				sameJSON(t, "reply", `{"id":1,"jsonrpc":"2.0","error":{"code":-32602,"message":`+quoteJSON(tt.wantMessage)+`}}`, w.recv())
				if err := w.end(); err != nil {
					t.Error(err)
				}
			})
		})
	}
	// A list without params, or with nulls, is a list of everything.
	synctest.Test(t, func(t *testing.T) {
		var got []acp.ListSessionsRequest
		agent := &lifecycleAgent{ListFunc: func(_ context.Context, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
			got = append(got, req)
			return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
		}}
		w := serve(t, t.Context(), agent, acp.Config{})
		w.send(request(1, acp.MethodSessionList, nil))
		sameJSON(t, "list", `{"id":1,"jsonrpc":"2.0","result":{"sessions":[]}}`, w.recv())
		w.send(`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{"cwd":null,"cursor":null}}`)
		sameJSON(t, "list", `{"id":2,"jsonrpc":"2.0","result":{"sessions":[]}}`, w.recv())
		if err := w.end(); err != nil {
			t.Error(err)
		}
		if len(got) != 2 || got[0].Cwd != "" || got[0].Cursor != "" || got[1].Cwd != "" || got[1].Cursor != "" {
			t.Errorf("the agent got %+v, want two empty requests", got)
		}
	})
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
