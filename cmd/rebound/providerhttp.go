package main

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/netclient"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/ratelimit"
	"github.com/rebound-agent/rebound/recovery"
)

// netOptions are how Rebound reaches servers over HTTP (the provider, its
// model list, MCP servers): the proxy the environment names (HTTPS_PROXY,
// HTTP_PROXY, NO_PROXY; an editor such as Zed passes them to agents) and
// provider.ca_file's authorities besides the system's.
func netOptions(cfg config.Config, e env) netclient.Options {
	return netclient.Options{Getenv: e.getenv, CAFile: cfg.Provider.CAFile, CAFrom: cfg.CAFrom(e.getenv), CAOnly: cfg.Provider.CAOnly, DialContext: e.dial}
}

// netTransports are the provider's HTTP client and a maker of MCP
// servers' transports, over one configuration. The CA file was checked by
// config.Load; it is read again here, and a file changed since stops the
// start naming its setting.
func netTransports(cfg config.Config, e env) (*http.Client, mcp.NewHTTP, error) {
	o := netOptions(cfg, e)
	t, err := netclient.Transport(o)
	if err != nil {
		return nil, nil, err
	}
	// No overall timeout, as llm.NewOpenAI's: the watchdogs bound a stream.
	client := &http.Client{Transport: netclient.HintCA(t, o.CAFile, o.CAFrom)}
	newMCP := func() http.RoundTripper { return netclient.HintCA(t.Clone(), o.CAFile, o.CAFrom) }
	return client, newMCP, nil
}

// providerHTTP wraps the provider's HTTP client: provider.headers on every
// request, and (provider.share_limits) every response told to the gate of
// the bucket it came from. The gates are those of one registry per
// process, over <state dir>/ratelimit.
func providerHTTP(cfg config.Config, base llm.HTTPDoer, log zerolog.Logger) (*providerRoutes, *bucketGates) {
	if base == nil {
		base = &http.Client{} // as llm.NewOpenAI: no overall timeout, the watchdogs bound a stream
	}
	g := &bucketGates{}
	doer := base
	if cfg.Provider.ShareLimits {
		dir := ""
		if cfg.StateDir != "" {
			dir = filepath.Join(cfg.StateDir, "ratelimit")
		}
		g.reg = ratelimit.New(ratelimit.Options{Dir: dir, Scope: cfg.Provider.LimitScope, Pacing: cfg.Provider.Pacing,
			MaxInFlight: cfg.Provider.MaxInFlight, MaxSpread: time.Duration(cfg.Recovery.MaxRetryAfter), Log: log.With().Str("component", "ratelimit").Logger()})
		doer = ratelimit.LearnDoer{Next: doer}
	}
	bare := doer
	if len(cfg.Provider.Headers) > 0 {
		h := http.Header{}
		for k, v := range cfg.Provider.Headers {
			h.Set(k, v)
		}
		doer = headerDoer{next: doer, h: h}
	}
	// providers/set may route the requests elsewhere (providerroute.go);
	// they are gated by the bucket of where they go.
	routes := newProviderRoutes(doer, bare, cfg.Provider.BaseURL)
	g.endpoint = routes.BaseURL
	return routes, g
}

// headerDoer adds static headers (provider.headers, validated) to every
// request. It logs nothing: the values may be a gateway's key.
type headerDoer struct {
	next llm.HTTPDoer
	h    http.Header
}

func (d headerDoer) Do(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a request is not to be changed by a client (net/http)
	for k, v := range d.h {
		req.Header[k] = v
	}
	resp, err := d.next.Do(req)
	if err != nil || resp == nil {
		return resp, err
	}
	return d.scrub(resp), nil
}

// Values shorter than minHeaderSecret are not scrubbed (as llm's redactor
// does for keys): "ci" or "true" would garble every message and hide
// nothing. maxScrubbed bounds what is read of an error body to scrub it;
// llm keeps less (64 KiB) of it anyway.
const (
	minHeaderSecret = 8
	maxScrubbed     = 1 << 20
)

// scrub removes the values of provider.headers from what a response may
// quote them in: its headers, and the body of a failure (a gateway that
// refuses a key may repeat it), which is what Rebound shows and logs; a
// streamed reply as it is read (scrubReader), for its in-stream errors.
func (d headerDoer) scrub(resp *http.Response) *http.Response {
	var secrets []string
	for _, vs := range d.h {
		for _, v := range vs {
			if len(v) >= minHeaderSecret {
				secrets = append(secrets, v)
			}
		}
	}
	if len(secrets) == 0 {
		return resp
	}
	clean := func(s string) string {
		for _, v := range secrets {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
		return s
	}
	for k, vs := range resp.Header {
		for i, v := range vs {
			resp.Header[k][i] = clean(v)
		}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		resp.Body = newScrubReader(resp.Body, secrets) // a stream's in-stream error may repeat them too
		return resp
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxScrubbed))
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(clean(string(body))))
	resp.ContentLength = -1
	return resp
}

// bucketGates hands the agent the gate of the bucket a model's requests
// go to, for the key in use (`rebound login` may change it while serving).
type bucketGates struct {
	reg      *ratelimit.Registry // nil: provider.share_limits is off
	endpoint func() string       // where the model's requests go now
	key      atomic.Pointer[string]
}

func (g *bucketGates) useKey(key string) { g.key.Store(&key) }

// gate is agent.Config.Gates: scripted (a test's env.gates) when set, else
// nil when sharing is off.
func (g *bucketGates) gate(scripted func(model string) recovery.Gate) func(model string) recovery.Gate {
	if scripted != nil {
		return scripted
	}
	if g.reg == nil {
		return nil
	}
	return func(model string) recovery.Gate {
		key := ""
		if k := g.key.Load(); k != nil {
			key = *k
		}
		return g.reg.Gate(g.endpoint(), key, model)
	}
}
