package acp

import (
	"sync"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"
)

// handshake is what initialize settles for one connection: the client's
// capabilities and whether they are known yet. It answers initialize from
// what the agent implements, and serves a client that skipped it. What a
// session may do (write through the editor, run in its terminal) depends on
// the capabilities the client declares.
type handshake struct {
	agent Agent
	cfg   Config
	log   zerolog.Logger

	mu          sync.Mutex
	caps        ClientCapabilities
	initialized bool // set by the first initialize, or the first other request
}

// capabilities returns what the client advertised in initialize (zero
// before it).
func (h *handshake) capabilities() ClientCapabilities {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.caps
}

// initialize serves initialize: the params are optional as a whole.
func (h *handshake) initialize(req *jsonrpc2.Request) (InitializeResponse, error) {
	var p InitializeRequest
	if err := decodeParams(req, &p, false); err != nil {
		return InitializeResponse{}, err
	}
	return h.answer(p), nil
}

// answer records the client's capabilities, replacing any assumed before,
// and says what the agent offers.
func (h *handshake) answer(p InitializeRequest) InitializeResponse {
	h.mu.Lock()
	h.caps = p.ClientCapabilities
	h.initialized = true
	h.mu.Unlock()
	ev := h.log.Info().Int("clientProtocolVersion", p.ProtocolVersion)
	if p.ClientInfo != nil {
		ev = ev.Str("client", p.ClientInfo.Name).Str("clientVersion", p.ClientInfo.Version)
	}
	ev.Msg("acp: initialize")
	// Version 1 is the only one spoken; the spec says to answer with the
	// latest supported one when the client's differs, and let it decide.
	return InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentCapabilities: AgentCapabilities{
			LoadSession:         true,
			PromptCapabilities:  PromptCapabilities{EmbeddedContext: true, Image: true},
			SessionCapabilities: sessionCapabilities(h.agent),
			McpCapabilities:     h.cfg.McpCapabilities,
			Auth:                authCapabilities(h.agent),
			Providers:           providersCapability(h.agent),
			Meta:                h.cfg.CapabilitiesMeta,
		},
		AuthMethods: authMethods(h.agent, p.ClientCapabilities),
		AgentInfo:   &Implementation{Name: AgentName, Version: h.cfg.Version},
	}
}

// unasked serves a client that sent method first, with no initialize: one
// that respawned Rebound after a crash and goes on with the session it
// shows (agent-shell does). Its capabilities are unknown, so none are
// assumed: no editor file system or terminal (tools work on the disk and
// run commands here, as for any client without them; the session's mode
// and permission requests, a baseline client method, still apply). A
// session it names is opened from its log on use (SessionReopener). A later
// initialize replaces the capabilities. Only the first request before
// initialize does this; it is a no-op after initialize.
func (h *handshake) unasked(method string) {
	h.mu.Lock()
	first := !h.initialized
	if first {
		h.initialized, h.caps = true, ClientCapabilities{}
	}
	h.mu.Unlock()
	if !first {
		return
	}
	h.log.Warn().Str("method", method).Msg("acp: no initialize before the first request; serving with no client capabilities")
	if r, ok := h.agent.(SessionReopener); ok {
		r.ReopenOnUse()
	}
}

// sessionCapabilities advertises the optional session methods agent
// implements; nil when it implements none.
func sessionCapabilities(agent Agent) *SessionCapabilities {
	var sc SessionCapabilities
	yes := func(ok bool) *struct{} {
		if ok {
			return &struct{}{}
		}
		return nil
	}
	_, list := agent.(SessionLister)
	_, resume := agent.(SessionResumer)
	_, closer := agent.(SessionCloser)
	_, deleter := agent.(SessionDeleter)
	_, forker := agent.(SessionForker)
	sc.List, sc.Resume, sc.Close, sc.Delete = yes(list), yes(resume), yes(closer), yes(deleter)
	sc.Fork = yes(forker)
	// Every lifecycle request takes additionalDirectories (params.go
	// checks them; the agent gives them to the tools).
	sc.AdditionalDirectories = &struct{}{}
	if sc == (SessionCapabilities{}) {
		return nil
	}
	return &sc
}
