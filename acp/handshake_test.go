package acp

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

// baseAgent is the least Agent: none of the optional methods.
type baseAgent struct{}

func (baseAgent) NewSession(context.Context, NewSessionRequest) (NewSessionResponse, error) {
	return NewSessionResponse{}, nil
}
func (baseAgent) LoadSession(context.Context, LoadSessionRequest, Client) (LoadSessionResponse, error) {
	return LoadSessionResponse{}, nil
}
func (baseAgent) Prompt(context.Context, PromptRequest, Client) (PromptResponse, error) {
	return PromptResponse{}, nil
}

// reopenAgent counts ReopenOnUse and lists sessions.
type reopenAgent struct {
	baseAgent
	mu      sync.Mutex
	reopens int
}

func (a *reopenAgent) ReopenOnUse() { a.mu.Lock(); a.reopens++; a.mu.Unlock() }
func (*reopenAgent) ListSessions(context.Context, ListSessionsRequest) (ListSessionsResponse, error) {
	return ListSessionsResponse{}, nil
}

// A client that skips initialize is served with no capabilities, and the
// agent is told once to reopen sessions on use; a later initialize replaces
// the capabilities, and a request after it assumes nothing.
func TestHandshake_UnaskedThenInitialize(t *testing.T) {
	a := &reopenAgent{}
	h := &handshake{agent: a}
	if got := h.capabilities(); got.Terminal || got.FS != (FileSystemCapabilities{}) {
		t.Fatalf("capabilities before anything = %+v, want zero", got)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { h.unasked(MethodSessionPrompt) })
	}
	wg.Wait()
	if a.reopens != 1 {
		t.Fatalf("ReopenOnUse called %d times, want once", a.reopens)
	}
	if got := h.capabilities(); got.Terminal {
		t.Fatalf("capabilities after an unasked request = %+v, want none assumed", got)
	}
	res := h.answer(InitializeRequest{ProtocolVersion: 1, ClientCapabilities: ClientCapabilities{Terminal: true}})
	if res.ProtocolVersion != ProtocolVersion || res.AgentInfo == nil || res.AgentInfo.Name != AgentName {
		t.Fatalf("initialize answered %+v", res)
	}
	h.unasked(MethodSessionNew)
	if got := h.capabilities(); !got.Terminal {
		t.Fatalf("capabilities after initialize and a request = %+v, want the client's", got)
	}
	if a.reopens != 1 {
		t.Fatalf("ReopenOnUse called %d times, want once", a.reopens)
	}
}

// After initialize, no request counts as unasked: the agent is never told
// to reopen sessions.
func TestHandshake_InitializedFirst(t *testing.T) {
	a := &reopenAgent{}
	h := &handshake{agent: a}
	if _, err := h.initialize(&jsonrpc2.Request{Method: MethodInitialize}); err != nil {
		t.Fatal(err) // params are optional
	}
	h.unasked(MethodSessionPrompt)
	if a.reopens != 0 {
		t.Fatalf("ReopenOnUse called %d times after initialize, want none", a.reopens)
	}
	bad := json.RawMessage(`[1]`)
	if _, err := h.initialize(&jsonrpc2.Request{Method: MethodInitialize, Params: &bad}); err == nil {
		t.Fatal("initialize with params that are not an object: no error")
	}
}

// The session capabilities follow what the agent implements, nil when it
// implements nothing optional; logout likewise.
func TestHandshake_AdvertisesWhatTheAgentImplements(t *testing.T) {
	res := (&handshake{agent: baseAgent{}, cfg: Config{Version: "v"}}).answer(InitializeRequest{})
	// additionalDirectories is the server's own: it checks them on every
	// lifecycle request and hands them to any agent.
	if sc := res.AgentCapabilities.SessionCapabilities; sc == nil || sc.AdditionalDirectories == nil || sc.List != nil || sc.Resume != nil || sc.Close != nil || sc.Delete != nil || sc.Fork != nil {
		t.Errorf("sessionCapabilities for an agent with no optional method = %+v, want additionalDirectories only", sc)
	}
	if res.AgentCapabilities.Providers != nil {
		t.Errorf("providers advertised for an agent without them")
	}
	if res.AgentCapabilities.Auth != nil || len(res.AuthMethods) != 0 || res.AuthMethods == nil {
		t.Errorf("auth for an agent without it = %+v, methods %#v, want none and []", res.AgentCapabilities.Auth, res.AuthMethods)
	}
	if res.AgentInfo.Version != "v" {
		t.Errorf("agentInfo.version = %q, want the config's", res.AgentInfo.Version)
	}
	sc := (&handshake{agent: &reopenAgent{}}).answer(InitializeRequest{}).AgentCapabilities.SessionCapabilities
	if sc == nil || sc.List == nil || sc.Resume != nil || sc.Close != nil || sc.Delete != nil || sc.Fork != nil {
		t.Errorf("sessionCapabilities for a lister = %+v, want list only", sc)
	}
}
