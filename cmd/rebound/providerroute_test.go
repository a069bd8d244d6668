package main

import (
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/config"
)

// seenDoer records the requests that reach the network and answers 200,
// or fail with status and a body quoting every header it was sent.
type seenDoer struct {
	mu     sync.Mutex
	reqs   []*http.Request
	status int
}

func (d *seenDoer) Do(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reqs = append(d.reqs, req)
	status := d.status
	if status == 0 {
		status = http.StatusOK
	}
	var quoted []string
	for _, vs := range req.Header {
		quoted = append(quoted, vs...)
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(strings.Join(quoted, " ")))}, nil
}

// providers/set: the configured base URL's requests go to the client's,
// with the client's headers instead of provider.headers (the API key still
// goes unless the client names an Authorization); other URLs are left
// alone; the client's header values are scrubbed from a failure.
func TestProviderRoutes(t *testing.T) {
	net := &seenDoer{}
	var cfg config.Config
	cfg.Provider.BaseURL = "https://api.example.com/v1"
	cfg.Provider.Headers = map[string]string{"X-Gateway-Key": "configured-secret"}
	routes, _ := providerHTTP(cfg, net, zerolog.Nop())
	send := func(url string) *http.Request {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer sk-key")
		if _, err := routes.Do(req); err != nil {
			t.Fatal(err)
		}
		return net.reqs[len(net.reqs)-1]
	}
	if got := send("https://api.example.com/v1/chat/completions"); got.Header.Get("X-Gateway-Key") != "configured-secret" || got.URL.Host != "api.example.com" {
		t.Fatalf("before providers/set: %s %v", got.URL, got.Header)
	}
	if routes.BaseURL() != "https://api.example.com/v1" {
		t.Errorf("BaseURL() = %q before a route", routes.BaseURL())
	}

	if err := routes.Route("https://gw.corp.example/openai/v1/", map[string]string{"X-Request-Source": "editor-secret-value"}); err != nil {
		t.Fatal(err)
	}
	got := send("https://api.example.com/v1/chat/completions?x=1")
	if got.URL.String() != "https://gw.corp.example/openai/v1/chat/completions?x=1" {
		t.Errorf("routed to %s", got.URL)
	}
	if got.Header.Get("X-Gateway-Key") != "" || got.Header.Get("X-Request-Source") != "editor-secret-value" || got.Header.Get("Authorization") != "Bearer sk-key" {
		t.Errorf("routed headers %v: want the client's and the key, not provider.headers", got.Header)
	}
	if routes.BaseURL() != "https://gw.corp.example/openai/v1" {
		t.Errorf("BaseURL() = %q after a route", routes.BaseURL())
	}
	// Only requests for the configured base URL are routed.
	for _, u := range []string{"https://api.example.com/v10/chat", "https://other.example/v1/chat"} {
		if got := send(u); got.URL.String() != u {
			t.Errorf("%s went to %s", u, got.URL)
		}
	}
	// The client's Authorization replaces the key.
	if err := routes.Route("https://gw.corp.example/v1", map[string]string{"Authorization": "Bearer gateway-token"}); err != nil {
		t.Fatal(err)
	}
	if got := send("https://api.example.com/v1/models"); got.Header.Get("Authorization") != "Bearer gateway-token" {
		t.Errorf("Authorization = %q, want the client's", got.Header.Get("Authorization"))
	}
	net.status = http.StatusUnauthorized
	req, _ := http.NewRequest(http.MethodGet, "https://api.example.com/v1/models", nil)
	resp, err := routes.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "gateway-token") {
		t.Errorf("a failure quoted the client's header value: %s", body)
	}
}

// Property: once the client routes the provider, every request Rebound
// makes for the configured base URL (built as go-openai builds it: the
// base URL, then the endpoint) goes to the client's base URL, however the
// configured one is written (a scheme in capitals, a host outside ASCII,
// escapes and trailing slashes in its path); a request for any other
// host or path is left alone. Found by driving the binary: a base_url of
// HTTP://… sent every request past the client's gateway while
// providers/list said they went through it.
func TestProviderRoutes_RouteWhateverTheBaseURLsSpelling(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 3))
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	endpoints := []string{"/chat/completions", "/models", "/chat/completions?stream=1"}
	for range 500 {
		base := pick("http", "https", "HTTP", "Https") + "://" + pick("api.example.com", "API.Example.com", "bücher.example", "127.0.0.1:8080", "[::1]:443") +
			pick("", "/v1", "/V1", "/openai/v1", "/%76%31", "/a b/v1", "/é/v1", "/v1;x") + pick("", "/", "//")
		var cfg config.Config
		cfg.Provider.BaseURL = base
		cfg.Provider.Headers = map[string]string{"X-Configured": "configured-secret"}
		net := &seenDoer{}
		routes, _ := providerHTTP(cfg, net, zerolog.Nop())
		to := pick("https://gw.corp.example/openai/v1", "http://127.0.0.1:9/v1", "https://gw.例え.jp/v1/")
		if err := routes.Route(to, map[string]string{"X-Client": "client-value"}); err != nil {
			t.Fatal(err)
		}
		want, err := url.Parse(strings.TrimSuffix(to, "/"))
		if err != nil {
			t.Fatal(err)
		}
		for _, ep := range endpoints {
			req, err := http.NewRequest(http.MethodPost, base+ep, nil)
			if err != nil {
				t.Fatalf("base %q: %v", base, err)
			}
			if _, err := routes.Do(req); err != nil {
				t.Fatalf("base %q: %v", base, err)
			}
			got := net.reqs[len(net.reqs)-1]
			epPath, epQuery, _ := strings.Cut(ep, "?")
			if got.URL.Host != want.Host || !routedPath(got.URL.Path, want.Path, epPath) || got.URL.RawQuery != epQuery || got.Header.Get("X-Client") != "client-value" || got.Header.Get("X-Configured") != "" {
				t.Fatalf("base %q routed to %q: request %q went to %q with %v", base, to, base+ep, got.URL, got.Header)
			}
		}
		// Not the configured base URL: left alone, with provider.headers.
		for _, other := range []string{"https://other.example/v1/chat/completions", strings.TrimRight(base, "/") + "0/chat/completions"} {
			req, err := http.NewRequest(http.MethodPost, other, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := routes.Do(req); err != nil {
				t.Fatal(err)
			}
			if got := net.reqs[len(net.reqs)-1]; got.URL.String() != req.URL.String() || got.Header.Get("X-Configured") != "configured-secret" {
				t.Fatalf("base %q: %q, not for it, went to %q with %v", base, other, got.URL, got.Header)
			}
		}
	}
}

// routedPath reports whether path is base then endpoint, give or take the
// slashes between them (a base URL's trailing slashes are kept).
func routedPath(path, base, endpoint string) bool {
	rest, ok := strings.CutPrefix(path, strings.TrimRight(base, "/"))
	return ok && strings.TrimLeft(rest, "/") == strings.TrimLeft(endpoint, "/")
}

// Route itself refuses a base URL whose query or fragment would swallow
// the endpoint's path (the acp package refuses it first; a caller that
// skips that check must not misroute).
func TestProviderRoutes_RefuseQueryOrFragment(t *testing.T) {
	var cfg config.Config
	cfg.Provider.BaseURL = "https://api.example.com/v1"
	routes, _ := providerHTTP(cfg, &seenDoer{}, zerolog.Nop())
	for _, to := range []string{"https://gw.example/v1?key=k", "https://gw.example/v1?", "https://gw.example/v1#f", "https://gw.example/%zz"} {
		if err := routes.Route(to, nil); err == nil {
			t.Errorf("Route(%q) = nil, want an error", to)
		}
	}
	if routes.BaseURL() != "https://api.example.com/v1" {
		t.Errorf("a refused route changed BaseURL() to %q", routes.BaseURL())
	}
}

// With provider.share_limits, a routed request is gated by the bucket of
// where it goes: the client's gateway counts its own limits, and neither
// its 429s hold other Rebound processes' requests to the configured
// provider nor theirs hold the routed ones (the gate kept the configured
// base URL's bucket after providers/set).
func TestProviderRoutes_GateFollowsTheRoute(t *testing.T) {
	var cfg config.Config
	cfg.Provider.BaseURL = "https://api.example.com/v1"
	cfg.Provider.ShareLimits = true
	cfg.StateDir = t.TempDir()
	routes, gates := providerHTTP(cfg, &seenDoer{}, zerolog.Nop())
	gates.useKey("sk-key")
	gate := gates.gate(nil)
	configured := gate("m")
	if err := routes.Route("https://gw.corp.example/v1", nil); err != nil {
		t.Fatal(err)
	}
	if routed := gate("m"); routed == configured {
		t.Error("after providers/set the model's requests are still gated by the configured provider's bucket")
	}
	if err := routes.Route("https://api.example.com/v1/", nil); err != nil {
		t.Fatal(err)
	}
	if back := gate("m"); back != configured {
		t.Error("routed back to the configured base URL, the requests are not gated by its bucket")
	}
}
