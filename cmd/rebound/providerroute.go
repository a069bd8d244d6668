package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/rebound-agent/rebound/llm"
)

// providerRoutes is agent.Config.Routes: where the client's providers/set
// (unstable ACP) sends the model's traffic. Unset, a request goes as the
// configuration says (provider.base_url, provider.headers). Set, every
// request for the configured base URL goes to the client's base URL
// instead, with the client's headers and not provider.headers (they may be
// another gateway's key); the API key still goes, unless the client's
// headers name an Authorization of their own. The client's header values
// are scrubbed from failures as provider.headers' are.
type providerRoutes struct {
	configured llm.HTTPDoer // the doer with provider.headers
	bare       llm.HTTPDoer // the same without them
	from       string       // provider.base_url, as configured

	mu    sync.Mutex
	to    string       // the client's base URL; "" while unset
	route llm.HTTPDoer // bare with the client's headers
}

func newProviderRoutes(configured, bare llm.HTTPDoer, baseURL string) *providerRoutes {
	return &providerRoutes{configured: configured, bare: bare, from: strings.TrimSuffix(baseURL, "/")}
}

// BaseURL is where model requests go now.
func (r *providerRoutes) BaseURL() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.to != "" {
		return r.to
	}
	return r.from
}

// Route sends the model's requests to baseURL with headers (checked by the
// acp package), replacing any route set before.
func (r *providerRoutes) Route(baseURL string, headers map[string]string) error {
	h := http.Header{}
	for k, v := range headers {
		h.Set(k, v)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = strings.TrimSuffix(baseURL, "/")
	r.route = headerDoer{next: r.bare, h: h}
	return nil
}

func (r *providerRoutes) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	to, route := r.to, r.route
	r.mu.Unlock()
	rest, ok := strings.CutPrefix(req.URL.String(), r.from)
	if to == "" || !ok || rest != "" && rest[0] != '/' && rest[0] != '?' {
		return r.configured.Do(req)
	}
	u, err := url.Parse(to + rest)
	if err != nil {
		return nil, err // unreachable: to is an absolute URL the acp package checked
	}
	req = req.Clone(req.Context())
	req.URL, req.Host = u, ""
	return route.Do(req)
}
