package acp_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// everyAgent serves every session method, recording what it was asked,
// with which client capabilities, and whether it was told to reopen
// sessions on use.
type everyAgent struct {
	mu      sync.Mutex
	called  []string
	caps    []acp.ClientCapabilities
	reopens int
}

var (
	_ acp.SessionReopener     = (*everyAgent)(nil)
	_ acp.SessionLister       = (*everyAgent)(nil)
	_ acp.SessionResumer      = (*everyAgent)(nil)
	_ acp.SessionCloser       = (*everyAgent)(nil)
	_ acp.SessionDeleter      = (*everyAgent)(nil)
	_ acp.SessionModeSetter   = (*everyAgent)(nil)
	_ acp.SessionConfigSetter = (*everyAgent)(nil)
)

func (a *everyAgent) note(method string, c acp.Client) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.called = append(a.called, method)
	if c != nil {
		a.caps = append(a.caps, c.Capabilities())
	}
}

func (a *everyAgent) ReopenOnUse() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reopens++
}

func (a *everyAgent) NewSession(context.Context, acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.note(acp.MethodSessionNew, nil)
	return acp.NewSessionResponse{SessionID: "s1"}, nil
}

func (a *everyAgent) LoadSession(_ context.Context, _ acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
	a.note(acp.MethodSessionLoad, c)
	return acp.LoadSessionResponse{}, nil
}

func (a *everyAgent) Prompt(_ context.Context, _ acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
	a.note(acp.MethodSessionPrompt, c)
	return acp.PromptResponse{StopReason: acp.StopEndTurn}, nil
}

func (a *everyAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	a.note(acp.MethodSessionList, nil)
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}

func (a *everyAgent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	a.note(acp.MethodSessionResume, nil)
	return acp.ResumeSessionResponse{}, nil
}

func (a *everyAgent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	a.note(acp.MethodSessionClose, nil)
	return acp.CloseSessionResponse{}, nil
}

func (a *everyAgent) DeleteSession(context.Context, acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	a.note(acp.MethodSessionDelete, nil)
	return acp.DeleteSessionResponse{}, nil
}

func (a *everyAgent) SetSessionMode(_ context.Context, _ acp.SetSessionModeRequest, c acp.Client) (acp.SetSessionModeResponse, error) {
	a.note(acp.MethodSessionSetMode, c)
	return acp.SetSessionModeResponse{}, nil
}

func (a *everyAgent) SetSessionConfigOption(_ context.Context, _ acp.SetSessionConfigOptionRequest, c acp.Client) (acp.SetSessionConfigOptionResponse, error) {
	a.note(acp.MethodSessionSetConfigOption, c)
	return acp.SetSessionConfigOptionResponse{}, nil
}

// sessionCalls are the session methods with params each accepts.
var sessionCalls = map[string]map[string]any{
	acp.MethodSessionNew:             {"cwd": "/w", "mcpServers": []any{}},
	acp.MethodSessionLoad:            {"sessionId": "s1", "cwd": "/w", "mcpServers": []any{}},
	acp.MethodSessionResume:          {"sessionId": "s1", "cwd": "/w"},
	acp.MethodSessionPrompt:          {"sessionId": "s1", "prompt": []any{map[string]any{"type": "text", "text": "go on"}}},
	acp.MethodSessionList:            {},
	acp.MethodSessionClose:           {"sessionId": "s1"},
	acp.MethodSessionDelete:          {"sessionId": "s1"},
	acp.MethodSessionSetMode:         {"sessionId": "s1", "modeId": "read_only"},
	acp.MethodSessionSetConfigOption: {"sessionId": "s1", "configId": "mode", "type": "select", "value": "read_only"},
	acp.MethodSessionCancel:          {"sessionId": "s1"},
}

// A client that respawned Rebound after a crash sends session methods with
// no initialize (agent-shell). Whatever the methods and their order, each
// is served by the agent as after an initialize with no client
// capabilities (no editor file system, no terminal), the agent is told
// once to reopen sessions on use, and nothing is refused for want of
// initialize. A later initialize is answered and replaces the
// capabilities.
func TestServer_RequestsBeforeInitializeAreServed(t *testing.T) {
	methods := make([]string, 0, len(sessionCalls))
	for m := range sessionCalls {
		methods = append(methods, m)
	}
	// Each method first, then random sequences of them.
	var runs [][]string
	for _, m := range methods {
		runs = append(runs, []string{m, acp.MethodSessionPrompt})
	}
	rng := rand.New(rand.NewPCG(32, 1))
	for range 40 {
		run := make([]string, 1+rng.IntN(6))
		for i := range run {
			run[i] = methods[rng.IntN(len(methods))]
		}
		runs = append(runs, run)
	}
	for _, run := range runs {
		t.Run(strings.Join(run, ","), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				agent := &everyAgent{}
				w := serveUninitialized(t, t.Context(), agent, acp.Config{})
				var want []string
				for i, m := range run {
					if m == acp.MethodSessionCancel {
						w.send(cancel("s1")) // a notification: no answer
						synctest.Wait()
						continue
					}
					w.send(request(i+1, m, sessionCalls[m]))
					var got struct {
						ID    int
						Error *acp.RequestError
					}
					if err := json.Unmarshal([]byte(w.recv()), &got); err != nil {
						t.Fatal(err)
					}
					if got.ID != i+1 || got.Error != nil {
						t.Errorf("%s (request %d) before initialize answered %d with error %+v", m, i+1, got.ID, got.Error)
					}
					want = append(want, m)
				}
				synctest.Wait()
				agent.mu.Lock()
				if !slices.Equal(agent.called, want) {
					t.Errorf("the agent was asked %v, want %v", agent.called, want)
				}
				if agent.reopens != 1 {
					t.Errorf("ReopenOnUse called %d times, want once", agent.reopens)
				}
				for _, c := range agent.caps {
					if c.FS.ReadTextFile || c.FS.WriteTextFile || c.Terminal || c.Notices() {
						t.Errorf("a client that skipped initialize was taken to offer %+v", c)
					}
				}
				agent.caps = nil
				agent.mu.Unlock()

				w.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}}}}`)
				if line := w.recv(); !strings.Contains(line, `"protocolVersion":1`) {
					t.Fatalf("initialize after %v answered %s", run, line)
				}
				w.send(request(99, acp.MethodSessionPrompt, sessionCalls[acp.MethodSessionPrompt]))
				w.recv()
				agent.mu.Lock()
				defer agent.mu.Unlock()
				if len(agent.caps) != 1 || !agent.caps[0].FS.ReadTextFile || agent.reopens != 1 {
					t.Errorf("after initialize: capabilities %+v, %d reopens; want the client's, one", agent.caps, agent.reopens)
				}
			})
		})
	}
}
