package agent

import (
	"context"
	"fmt"

	"github.com/rebound-agent/rebound/acp"
)

// Provider configuration by the client (unstable ACP: providers/list, set,
// disable, advertised as agentCapabilities.providers when Config.Routes is
// set). Rebound has one provider, MainProvider, an OpenAI-compatible API:
// required (a session has no model without it), so it cannot be disabled.
// providers/set routes the model's requests (and the model list's) to the
// client's base URL with the client's headers, from the next request on,
// for every session of this process; nothing is stored.

var _ acp.ProviderConfigurer = (*Agent)(nil)

// MainProvider is the id of Rebound's one provider.
const MainProvider = "main"

// ProviderRoutes is where the model's requests go, which providers/set
// changes (cmd/rebound: its HTTP client).
type ProviderRoutes interface {
	// BaseURL is where they go now.
	BaseURL() string
	// Route sends them to baseURL with headers (checked: an absolute
	// http(s) URL, valid header names and values), replacing any route
	// set before.
	Route(baseURL string, headers map[string]string) error
}

// ProvidersConfigurable reports whether providers/* are served: only with
// Config.Routes.
func (a *Agent) ProvidersConfigurable() bool { return a.cfg.Routes != nil }

// ListProviders lists MainProvider and where it sends requests now.
func (a *Agent) ListProviders(ctx context.Context, req acp.ListProvidersRequest) (acp.ListProvidersResponse, error) {
	return acp.ListProvidersResponse{Providers: []acp.ProviderInfo{{
		ProviderID: MainProvider,
		Supported:  []string{acp.LlmProtocolOpenAI},
		Required:   true,
		Current:    &acp.ProviderCurrentConfig{APIType: acp.LlmProtocolOpenAI, BaseURL: a.cfg.Routes.BaseURL()},
	}}}, nil
}

// SetProvider routes MainProvider's requests as the client says.
func (a *Agent) SetProvider(ctx context.Context, req acp.SetProviderRequest) (acp.SetProviderResponse, error) {
	if err := knownProvider(req.ProviderID); err != nil {
		return acp.SetProviderResponse{}, err
	}
	if req.APIType != acp.LlmProtocolOpenAI {
		return acp.SetProviderResponse{}, acp.NewInvalidParams("provider %s speaks %q only, not %s", MainProvider, acp.LlmProtocolOpenAI, quote(req.APIType))
	}
	if err := a.cfg.Routes.Route(req.BaseURL, req.Headers); err != nil {
		return acp.SetProviderResponse{}, fmt.Errorf("route provider %s: %w", MainProvider, err)
	}
	// The header values are not logged: they may be a key.
	a.cfg.Logger.Info().Str("baseURL", req.BaseURL).Int("headers", len(req.Headers)).Msg("providers/set: model requests routed by the client")
	return acp.SetProviderResponse{}, nil
}

// DisableProvider refuses: MainProvider is required.
func (a *Agent) DisableProvider(ctx context.Context, req acp.DisableProviderRequest) (acp.DisableProviderResponse, error) {
	if err := knownProvider(req.ProviderID); err != nil {
		return acp.DisableProviderResponse{}, err
	}
	return acp.DisableProviderResponse{}, acp.NewInvalidParams("provider %s is required (providers/list says so): Rebound has no model without it", MainProvider)
}

func knownProvider(id string) error {
	if id != MainProvider {
		return acp.NewInvalidParams("unknown providerId %s; the providers are %q", quote(id), MainProvider)
	}
	return nil
}
