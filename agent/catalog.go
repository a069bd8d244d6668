package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// How the provider's model list is asked for and kept. The list fills the
// editor's model picker when a session is made, so it is asked with a short
// timeout, and a provider without one is not asked again at every session.
const (
	ModelListTimeout = 3 * time.Second
	modelListTTL     = 10 * time.Minute
	modelListRetry   = time.Minute
)

// catalog caches the provider's model list, and says which models a
// session may switch to. It knows the provider and the configuration only
// through what it is given.
type catalog struct {
	provider func() llm.Provider // the provider in use (signIn.current)
	model    string              // the configured model, always offered
	override *modelOverride      // the model set up at sign-in, instead (signin.go)
	fallback []string            // provider.models, offered when the provider lists none
	// contextWindow is provider.context_window: 0 when not configured.
	contextWindow uint64
	log           *zerolog.Logger

	mu sync.Mutex
	// models is the last list the provider gave: a failed request keeps
	// it, since sessions were offered it.
	models   []string
	expires  time.Time
	failed   bool          // the last request failed
	fetching chan struct{} // closed when the request in flight ends
	// owed are the sessions answered without the list, as it was not
	// current: once it is, after each answer (SessionAnswered), the
	// session is sent its configuration options again.
	owed map[string]owed
}

// owed is a session's debt of a model list: the choices its answer
// offered, and how many answers are still to be written.
type owed struct {
	s       *sessionState
	offered []string
	answers int
}

// providerModels is the provider's model list, waiting for it (until ctx
// ends) when the cached one has expired; nil when the provider has none.
// ok is false when there is no current list: the provider had none (or
// said no, or took too long, within modelListRetry), or ctx ended.
// Concurrent callers share one request.
func (c *catalog) providerModels(ctx context.Context) (models []string, ok bool) {
	for {
		models, ch := c.knownModels()
		if ch == nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			return models, !c.failed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return models, false
		}
	}
}

// knownModels is the provider's model list as known now, without waiting:
// the last one it gave, even if expired. When that has expired a request
// is started (unless one is in flight), and ch is closed when it ends; ch
// is nil when the list is current or the provider has none.
func (c *catalog) knownModels() (models []string, ch <-chan struct{}) {
	lister, ok := c.provider().(llm.ModelLister)
	if !ok {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fetching == nil && time.Now().Before(c.expires) {
		return c.models, nil
	}
	if c.fetching == nil {
		c.fetching = make(chan struct{})
		go c.fetchModels(lister, c.fetching)
	}
	return c.models, c.fetching
}

// fetchModels asks lister for its models and keeps the answer.
func (c *catalog) fetchModels(lister llm.ModelLister, done chan struct{}) {
	models, err := listModels(lister)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fetching = nil
	close(done)
	if err != nil {
		c.log.Info().Err(err).Msg("no model list from the provider; the model picker offers what it offered")
		c.failed, c.expires = true, time.Now().Add(modelListRetry)
		return
	}
	c.models, c.failed, c.expires = models, false, time.Now().Add(modelListTTL)
}

// modelChoices are the models a session may switch to, waiting for the
// provider's list if it is not current.
func (c *catalog) modelChoices(ctx context.Context, current string) []string {
	list, _ := c.providerModels(ctx)
	return c.choicesOf(list, current)
}

// choicesOf are the models a session may switch to: the provider's list,
// else provider.models, with the configured model and the session's
// current one always among them.
func (c *catalog) choicesOf(list []string, current string) []string {
	if len(list) == 0 {
		list = c.fallback
	}
	model := c.override.or(c.model)
	out := llm.CleanModelIDs(append(slices.Clone(list), model))
	if !slices.Contains(out, current) {
		out = append(out, current)
	}
	if !slices.Contains(out, model) { // cut by the bound
		out = append(out, model)
	}
	return out
}

// answerChoices are the model choices a session/new, load or resume
// answers with: what is known now, since the editor waits for the answer.
// If the provider's list is not current, the session is owed it: once
// the answer is written (SessionAnswered), it gets its options again as
// soon as the list comes.
func (c *catalog) answerChoices(s *sessionState, current string) []string {
	list, ch := c.knownModels()
	choices := c.choicesOf(list, current)
	if ch == nil {
		return choices
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owed == nil {
		c.owed = map[string]owed{}
	}
	o := c.owed[s.id]
	if o.s != s {
		o = owed{s: s}
	}
	o.offered, o.answers = choices, o.answers+1
	c.owed[s.id] = o
	return choices
}

// afterAnswer follows the answer to a session/new, load or resume
// (Agent.SessionAnswered): what the editor is sent once it knows the
// session.
type afterAnswer struct {
	catalog *catalog
	menu    *configMenu
	// whileHeld runs f while the session is still held
	// (sessionHolder.whileHeld).
	whileHeld func(s *sessionState, f func()) bool
	log       *zerolog.Logger
}

// answered sends the slash commands, and follows an answer that offered
// the models known then, not the provider's list: when the list comes, the
// session is sent all its options in a config_option_update, from a
// goroutine of its own. A session closed meanwhile, or an answer whose
// choices the list does not change, gets nothing; so does any if the
// request fails (the editor keeps what the answer offered).
func (f afterAnswer) answered(ctx context.Context, sessionID string, c acp.Client) {
	// The slash commands (slash.go): clients drop them before the answer.
	// Update only queues the message.
	notify(ctx, f.log, c, sessionID, commandsUpdate(), "the slash commands were not sent")
	if o, ok := f.catalog.answered(sessionID); ok {
		go f.sendModels(ctx, o.s, o.offered, c)
	}
}

// answered takes note that an answer to the session was written, and
// returns what it is owed, if anything: ok once per answer that offered
// choices made without a current list.
func (c *catalog) answered(sessionID string) (o owed, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok = c.owed[sessionID]
	if ok {
		if o.answers--; o.answers == 0 {
			delete(c.owed, sessionID)
		} else {
			c.owed[sessionID] = o
		}
	}
	return o, ok
}

// sendModels waits for the provider's model list and sends s its options
// with it, unless they offer what offered did.
func (f afterAnswer) sendModels(ctx context.Context, s *sessionState, offered []string, c acp.Client) {
	list, ok := f.catalog.providerModels(ctx)
	if !ok {
		return
	}
	// whileCurrent keeps a change of the options from being answered
	// between reading them and sending them; the store's lock keeps the
	// session from being closed in between, so a closed session is sent
	// nothing. The update is only queued for the output.
	s.options.whileCurrent(func(o options) {
		choices := f.catalog.choicesOf(list, o.model)
		if slices.Equal(choices, offered) {
			return
		}
		f.whileHeld(s, func() {
			notifyOptions(ctx, f.log, c, s.id, acp.ConfigOptionUpdate(f.menu.optionsWith(o, choices)))
		})
	})
}

// listModels asks lister within ModelListTimeout; a panic in it is an
// error, since a model picker must never cost a session.
func listModels(lister llm.ModelLister) (models []string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), ModelListTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			models, err = nil, fmt.Errorf("listing the models panicked: %v", r)
		}
	}()
	return lister.ListModels(ctx)
}
