package main

import (
	"io"
	"net/http"
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
