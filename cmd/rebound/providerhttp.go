package main

import (
	"net/http"
	"path/filepath"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/ratelimit"
	"github.com/rebound-agent/rebound/recovery"
)

// providerHTTP wraps the provider's HTTP client: provider.headers on every
// request, and (provider.share_limits) every response told to the gate of
// the bucket it came from. The gates are those of one registry per
// process, over <state dir>/ratelimit.
func providerHTTP(cfg config.Config, base llm.HTTPDoer, log zerolog.Logger) (llm.HTTPDoer, *bucketGates) {
	if base == nil {
		base = &http.Client{} // as llm.NewOpenAI: no overall timeout, the watchdogs bound a stream
	}
	g := &bucketGates{endpoint: cfg.Provider.BaseURL}
	doer := base
	if cfg.Provider.ShareLimits {
		dir := ""
		if cfg.StateDir != "" {
			dir = filepath.Join(cfg.StateDir, "ratelimit")
		}
		g.reg = ratelimit.New(ratelimit.Options{Dir: dir, Scope: cfg.Provider.LimitScope, Pacing: cfg.Provider.Pacing,
			MaxInFlight: cfg.Provider.MaxInFlight, Log: log.With().Str("component", "ratelimit").Logger()})
		doer = ratelimit.LearnDoer{Next: doer}
	}
	if len(cfg.Provider.Headers) > 0 {
		h := http.Header{}
		for k, v := range cfg.Provider.Headers {
			h.Set(k, v)
		}
		doer = headerDoer{next: doer, h: h}
	}
	return doer, g
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
	return d.next.Do(req)
}

// bucketGates hands the agent the gate of the bucket a model's requests
// go to, for the key in use (`rebound login` may change it while serving).
type bucketGates struct {
	reg      *ratelimit.Registry // nil: provider.share_limits is off
	endpoint string
	key      atomic.Pointer[string]
}

func (g *bucketGates) useKey(key string) { g.key.Store(&key) }

// gate is agent.Config.Gates: nil when sharing is off.
func (g *bucketGates) gate() func(model string) recovery.Gate {
	if g.reg == nil {
		return nil
	}
	return func(model string) recovery.Gate {
		key := ""
		if k := g.key.Load(); k != nil {
			key = *k
		}
		return g.reg.Gate(g.endpoint, key, model)
	}
}
