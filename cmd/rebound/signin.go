package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/llm"
)

// keyName is the variable the API key is looked for under: the configured
// provider.api_key_env, until a sign-in in the editor set up another
// provider (editorSetUp). The key's lookup, logout and what children must
// not inherit follow it.
type keyName struct {
	mu      sync.Mutex
	name    string
	earlier []string // names used before, whose values children still must not inherit
}

func (k *keyName) get() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.name
}

func (k *keyName) set(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if name != k.name {
		// Each name once: there are only so many presets.
		k.earlier = append(slices.DeleteFunc(k.earlier, func(n string) bool { return n == name || n == k.name }), k.name)
		k.name = name
	}
}

// all are the names used since start-up, the current one first.
func (k *keyName) all() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string{k.name}, k.earlier...)
}

// newProvider is agent.Config.NewProvider: it looks for the key again, as
// `rebound login` may store one while the editor runs Rebound, under the
// variable named now (never a former provider's key for the new one), and
// makes a provider with use.
func (k *keyName) newProvider(e env, use func(key string) llm.Provider) func() (llm.Provider, error) {
	return func() (llm.Provider, error) {
		key, err := config.APIKey(k.get(), e.getenv, e.home)
		if key == "" {
			return nil, err
		}
		return use(key), nil
	}
}

// editorSetUp is agent.Config.SetUp: what `rebound login` does, for the
// answers a sign-in in the editor collected, and then the running Rebound
// uses the new provider: its requests, made for the configured base URL,
// go to the new one (providerRoutes, without provider.headers, which were
// the former provider's), with the new key.
type editorSetUp struct {
	cfg    config.Config // the settings at start-up
	e      env
	list   llm.HTTPDoer // the model list's client (proxy, certificate authorities)
	routes *providerRoutes
	key    *keyName
	// use makes the provider for key and counts the key as used (for
	// the gates and children's secrets).
	use func(key string) llm.Provider

	mu sync.Mutex // one set-up stored at a time
}

var _ agent.ProviderSetUp = (*editorSetUp)(nil)

func (s *editorSetUp) Presets() []agent.SetUpPreset {
	out := make([]agent.SetUpPreset, len(config.Presets))
	for i, p := range config.Presets {
		out[i] = agent.SetUpPreset{ID: p.ID, Name: p.Name, BaseURL: p.BaseURL, NeedsKey: p.Placeholder == ""}
	}
	return out
}

// resolve is choice's preset, base URL and key (the placeholder of a
// server that needs none), checked as `rebound login` checks them.
func (s *editorSetUp) resolve(choice agent.SetUpChoice) (base, key string, err error) {
	p, base, _, err := config.ResolveChoice(s.cfg, choice.Provider, choice.BaseURL)
	if err != nil {
		return "", "", err
	}
	if p.Placeholder != "" {
		return base, p.Placeholder, nil
	}
	if choice.Key == "" {
		return "", "", fmt.Errorf("%s needs an API key", p.Name)
	}
	return base, choice.Key, config.CheckAPIKey(choice.Key)
}

func (s *editorSetUp) Check(choice agent.SetUpChoice) error {
	_, _, err := s.resolve(choice)
	return err
}

func (s *editorSetUp) Models(ctx context.Context, choice agent.SetUpChoice) ([]string, error) {
	base, key, err := s.resolve(choice)
	if err != nil {
		return nil, err
	}
	return config.ListModels(ctx, base, key, s.list)
}

func (s *editorSetUp) Save(ctx context.Context, choice agent.SetUpChoice) (agent.SetUpDone, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var flags config.Flags
	if s.cfg.Source != "" {
		flags.ConfigPath = &s.cfg.Source
	}
	res, err := config.SaveProvider(flags, s.e.getenv, s.e.home, config.ProviderChoice{Provider: choice.Provider, BaseURL: choice.BaseURL, Key: choice.Key, Model: choice.Model})
	if err != nil {
		return agent.SetUpDone{}, err
	}
	// As after a restart: a key in the environment comes before the one
	// stored.
	key, err := config.APIKey(res.Name, s.e.getenv, s.e.home)
	if key == "" {
		return agent.SetUpDone{}, errors.Join(errors.New("the key stored can't be read back"), err)
	}
	if err := s.routes.Route(res.BaseURL, nil); err != nil {
		return agent.SetUpDone{}, fmt.Errorf("route the model's requests to %s: %w", res.BaseURL, err)
	}
	s.key.set(res.Name)
	return agent.SetUpDone{Provider: s.use(key), Model: res.Model, KeyEnv: res.Name,
		ModelFrom: "provider.model in " + res.Config + ", set at sign-in in the editor", Stored: setUpStored(res)}, nil
}

// setUpStored says what a set-up in the editor stored, as `rebound login`
// says it on a terminal.
func setUpStored(res config.LoginResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Set provider.base_url = %q, provider.model = %q and provider.api_key_env = %q in %s, and stored the API key for %s in %s.",
		res.BaseURL, res.Model, res.Name, res.Config, res.Name, res.Path)
	if res.Shadowed {
		fmt.Fprintf(&b, " %s is set in Rebound's environment: it is used instead of the stored key.", res.Name)
	}
	for _, v := range res.Overridden {
		fmt.Fprintf(&b, " %s is set in Rebound's environment: after a restart it overrides what was written.", v)
	}
	return b.String()
}
