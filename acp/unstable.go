package acp

import "context"

// The unstable parts of ACP v1 that Rebound implements, as the official
// schema.unstable.json defines them (agentclientprotocol/agent-client-protocol,
// schema/v1, 2026-08; not in the SDK 2.4.0 schema): PromptResponse.usage,
// session/fork (sessionCapabilities.fork) and providers/list, set and
// disable (agentCapabilities.providers). They may change upstream; a
// client that does not know them ignores the capabilities and the field.
const (
	MethodSessionFork      = "session/fork"
	MethodProvidersList    = "providers/list"
	MethodProvidersSet     = "providers/set"
	MethodProvidersDisable = "providers/disable"
)

// Usage is the tokens a prompt turn used (PromptResponse.usage).
// TotalTokens is InputTokens plus OutputTokens; the optional counts are
// left out when the provider reported none.
type Usage struct {
	TotalTokens       uint64  `json:"totalTokens"`
	InputTokens       uint64  `json:"inputTokens"`
	OutputTokens      uint64  `json:"outputTokens"`
	ThoughtTokens     *uint64 `json:"thoughtTokens,omitempty"`
	CachedReadTokens  *uint64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *uint64 `json:"cachedWriteTokens,omitempty"`
}

// ForkSessionRequest is the params of session/fork: a new session made
// from SessionID's, working in Cwd.
type ForkSessionRequest struct {
	SessionID             string      `json:"sessionId"`
	Cwd                   string      `json:"cwd"`
	AdditionalDirectories []string    `json:"additionalDirectories,omitempty"`
	McpServers            []McpServer `json:"mcpServers,omitempty"`
	Meta                  Meta        `json:"_meta,omitempty"`
}

// ForkSessionResponse names the new session and its modes and options.
type ForkSessionResponse struct {
	SessionID     string            `json:"sessionId"`
	Modes         *SessionModeState `json:"modes,omitempty"`
	ConfigOptions []ConfigOption    `json:"configOptions,omitempty"`
	Meta          Meta              `json:"_meta,omitempty"`
}

// SessionForker serves session/fork, advertised as
// sessionCapabilities.fork.
type SessionForker interface {
	ForkSession(ctx context.Context, req ForkSessionRequest) (ForkSessionResponse, error)
}

// LlmProtocol values Rebound speaks: the schema's list is open (any
// string), these are its well-known names.
const (
	LlmProtocolOpenAI = "openai"
)

// ProviderCurrentConfig is where a provider sends requests now.
type ProviderCurrentConfig struct {
	APIType string `json:"apiType"`
	BaseURL string `json:"baseUrl"`
}

// ProviderInfo is one provider the client may configure. A nil Current
// means the provider is disabled.
type ProviderInfo struct {
	ProviderID string                 `json:"providerId"`
	Supported  []string               `json:"supported"`
	Required   bool                   `json:"required"`
	Current    *ProviderCurrentConfig `json:"current"`
	Meta       Meta                   `json:"_meta,omitempty"`
}

type ListProvidersRequest struct {
	Meta Meta `json:"_meta,omitempty"`
}

type ListProvidersResponse struct {
	Providers []ProviderInfo `json:"providers"`
	Meta      Meta           `json:"_meta,omitempty"`
}

// SetProviderRequest replaces the whole configuration of one provider:
// Headers not named are dropped.
type SetProviderRequest struct {
	ProviderID string            `json:"providerId"`
	APIType    string            `json:"apiType"`
	BaseURL    string            `json:"baseUrl"`
	Headers    map[string]string `json:"headers,omitempty"`
	Meta       Meta              `json:"_meta,omitempty"`
}

type SetProviderResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

type DisableProviderRequest struct {
	ProviderID string `json:"providerId"`
	Meta       Meta   `json:"_meta,omitempty"`
}

type DisableProviderResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// ProviderConfigurer serves providers/list, set and disable, advertised
// as agentCapabilities.providers.
type ProviderConfigurer interface {
	// ProvidersConfigurable reports whether the methods are served; if
	// not, they are not advertised and not found.
	ProvidersConfigurable() bool
	ListProviders(ctx context.Context, req ListProvidersRequest) (ListProvidersResponse, error)
	SetProvider(ctx context.Context, req SetProviderRequest) (SetProviderResponse, error)
	DisableProvider(ctx context.Context, req DisableProviderRequest) (DisableProviderResponse, error)
}
