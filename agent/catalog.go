package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/agent/llm"
)

// How the provider's model list is asked for and kept. The list fills the
// editor's model picker when a session is made, so it is asked with a short
// timeout, and a provider without one is not asked again at every session.
const (
	ModelListTimeout = 3 * time.Second
	modelListTTL     = 10 * time.Minute
	modelListRetry   = time.Minute
)

// catalog caches the provider's model list.
type catalog struct {
	mu       sync.Mutex
	models   []string
	expires  time.Time
	fetching chan struct{} // closed when the request in flight ends
}

// providerModels is the provider's model list, asked for when the cached
// one has expired; nil when the provider has none (or said no, or took too
// long). Concurrent callers share one request.
func (a *Agent) providerModels(ctx context.Context) []string {
	lister, ok := a.currentProvider().(llm.ModelLister)
	if !ok {
		return nil
	}
	c := &a.catalog
	c.mu.Lock()
	for c.fetching != nil {
		ch := c.fetching
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil
		}
		c.mu.Lock()
	}
	if time.Now().Before(c.expires) {
		defer c.mu.Unlock()
		return c.models
	}
	ch := make(chan struct{})
	c.fetching = ch
	c.mu.Unlock()

	models, err := listModels(ctx, lister)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetching = nil
	close(ch)
	if err != nil {
		a.cfg.Logger.Info().Err(err).Msg("no model list from the provider; the model picker offers provider.models")
		c.models, c.expires = nil, time.Now().Add(modelListRetry)
		return nil
	}
	c.models, c.expires = models, time.Now().Add(modelListTTL)
	return c.models
}

// modelChoices are the models a session may switch to: the provider's list,
// else provider.models, with the configured model and the session's current
// one always among them.
func (a *Agent) modelChoices(ctx context.Context, current string) []string {
	list := a.providerModels(ctx)
	if len(list) == 0 {
		list = a.cfg.Models
	}
	out := llm.CleanModelIDs(append(slices.Clone(list), a.cfg.Model))
	if !slices.Contains(out, current) {
		out = append(out, current)
	}
	if !slices.Contains(out, a.cfg.Model) { // cut by the bound
		out = append(out, a.cfg.Model)
	}
	return out
}

// listModels asks lister within ModelListTimeout. The request outlives a
// caller that gives up, so the next one finds its answer; a panic in it is
// an error, since a model picker must never cost a session.
func listModels(ctx context.Context, lister llm.ModelLister) (models []string, err error) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ModelListTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			models, err = nil, fmt.Errorf("listing the models panicked: %v", r)
		}
	}()
	return lister.ListModels(fctx)
}
