package agent

import (
	"fmt"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
)

// Provider configuration by the client (unstable ACP: providers/list, set,
// disable, advertised as agentCapabilities.providers when Config.Routes is
// set). Rebound has one provider, MainProvider, an OpenAI-compatible API:
// required (a session has no model without it), so it cannot be disabled.
// providers/set routes the model's requests (and the model list's) to the
// client's base URL with the client's headers, from the next request on,
// for every session of this process; nothing is stored.

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

// providerRouter serves providers/* (Agent.ListProviders, SetProvider,
// DisableProvider) over routes; nil routes: they are not served.
type providerRouter struct {
	routes ProviderRoutes
	log    *zerolog.Logger
}

// configurable reports whether providers/* are served: only with routes.
func (p providerRouter) configurable() bool { return p.routes != nil }

// list lists MainProvider and where it sends requests now.
func (p providerRouter) list() acp.ListProvidersResponse {
	return acp.ListProvidersResponse{Providers: []acp.ProviderInfo{{
		ProviderID: MainProvider,
		Supported:  []string{acp.LlmProtocolOpenAI},
		Required:   true,
		Current:    &acp.ProviderCurrentConfig{APIType: acp.LlmProtocolOpenAI, BaseURL: p.routes.BaseURL()},
	}}}
}

// set routes MainProvider's requests as the client says.
func (p providerRouter) set(req acp.SetProviderRequest) error {
	if err := knownProvider(req.ProviderID); err != nil {
		return err
	}
	if req.APIType != acp.LlmProtocolOpenAI {
		return acp.NewInvalidParams("provider %s speaks %q only, not %s", MainProvider, acp.LlmProtocolOpenAI, quote(req.APIType))
	}
	if err := p.routes.Route(req.BaseURL, req.Headers); err != nil {
		return fmt.Errorf("route provider %s: %w", MainProvider, err)
	}
	// The header values are not logged: they may be a key.
	p.log.Info().Str("baseURL", req.BaseURL).Int("headers", len(req.Headers)).Msg("providers/set: model requests routed by the client")
	return nil
}

// disable refuses: MainProvider is required.
func (p providerRouter) disable(req acp.DisableProviderRequest) error {
	if err := knownProvider(req.ProviderID); err != nil {
		return err
	}
	return acp.NewInvalidParams("provider %s is required (providers/list says so): Rebound has no model without it", MainProvider)
}

func knownProvider(id string) error {
	if id != MainProvider {
		return acp.NewInvalidParams("unknown providerId %s; the providers are %q", quote(id), MainProvider)
	}
	return nil
}
