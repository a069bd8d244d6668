package main

import (
	"fmt"
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
	fromURL    *url.URL     // from parsed; nil if it does not parse

	mu    sync.Mutex
	to    string       // the client's base URL; "" while unset
	route llm.HTTPDoer // bare with the client's headers
}

func newProviderRoutes(configured, bare llm.HTTPDoer, baseURL string) *providerRoutes {
	from := strings.TrimSuffix(baseURL, "/")
	u, err := url.Parse(from)
	if err != nil {
		u = nil
	}
	return &providerRoutes{configured: configured, bare: bare, from: from, fromURL: u}
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
	if r.fromURL == nil {
		return fmt.Errorf("the configured base URL %q does not parse: its requests cannot be told apart", r.from)
	}
	// The path of a request is appended to baseURL: a query or fragment
	// in it would swallow that path.
	if u, err := url.Parse(baseURL); err != nil || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(baseURL, "?") {
		return fmt.Errorf("base URL %q: want an absolute URL without a query or fragment", baseURL)
	}
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
	rest, ok := under(r.fromURL, req.URL)
	if to == "" || !ok {
		return r.configured.Do(req)
	}
	if req.URL.RawQuery != "" {
		rest += "?" + req.URL.RawQuery
	}
	u, err := url.Parse(to + rest)
	if err != nil {
		return nil, fmt.Errorf("route %s to %s: %w", req.URL.Redacted(), to, err)
	}
	req = req.Clone(req.Context())
	req.URL, req.Host = u, ""
	return route.Do(req)
}

// under reports whether u is base or below it, and the rest of u's path
// (escaped) after base's. It compares URLs, not their text: the scheme and
// host without regard to case, so that a base URL written HTTP://… or
// with a host outside ASCII is routed as any other (a request's URL is
// the base URL parsed and written again, which changes both).
func under(base, u *url.URL) (rest string, ok bool) {
	if base == nil || !strings.EqualFold(base.Scheme, u.Scheme) || !strings.EqualFold(base.Host, u.Host) {
		return "", false
	}
	rest, ok = strings.CutPrefix(u.EscapedPath(), strings.TrimRight(base.EscapedPath(), "/"))
	if !ok || rest != "" && rest[0] != '/' {
		return "", false
	}
	return rest, true
}
