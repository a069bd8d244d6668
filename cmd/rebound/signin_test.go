package main

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/llm"
)

// A set-up in the editor is stored where `rebound login` stores it, and the
// running Rebound's requests, made for the configured base URL, go to the
// new provider with the new key and without provider.headers (the former
// provider's); the key is then looked for, forgotten by logout and kept from
// children under the new variable, and the former one is still kept from
// children.
func TestEditorSetUp_SwapsTheRunningProvider(t *testing.T) {
	home := t.TempDir()
	getenv := env{getenv: func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "sk-old-in-env"
		}
		return ""
	}, home: home}
	var cfg config.Config
	cfg.Provider.BaseURL = "https://api.openai.com/v1"
	cfg.Provider.APIKeyEnv = "OPENAI_API_KEY"
	cfg.Provider.Headers = map[string]string{"X-Gateway-Key": "configured-secret"}
	net := &seenDoer{}
	routes, _ := providerHTTP(cfg, net, zerolog.Nop())
	var keys usedKeys
	keyEnv := &keyName{name: cfg.Provider.APIKeyEnv}
	su := &editorSetUp{cfg: cfg, e: getenv, list: net, routes: routes, key: keyEnv, use: func(key string) llm.Provider {
		keys.add(key)
		return llm.NewOpenAI(llm.OpenAIConfig{BaseURL: cfg.Provider.BaseURL, APIKey: key, HTTPClient: routes})
	}}
	choice := agent.SetUpChoice{Provider: "deepseek", Key: "sk-deepseek-new", Model: "deepseek-chat"}
	if err := su.Check(choice); err != nil {
		t.Fatal(err)
	}
	done, err := su.Save(t.Context(), choice)
	if err != nil {
		t.Fatalf("Save() = %v", err)
	}
	if done.Model != "deepseek-chat" || done.KeyEnv != "DEEPSEEK_API_KEY" {
		t.Errorf("Save() = %+v", done)
	}
	stored, err := config.ReadAPIKey(filepath.Join(home, ".config", "rebound", "credentials"), "DEEPSEEK_API_KEY")
	if err != nil || stored != "sk-deepseek-new" {
		t.Errorf("stored key %v (err %v), want the new one", stored == "sk-deepseek-new", err)
	}

	s, err := done.Provider.Stream(t.Context(), llm.Request{Model: "deepseek-chat", Messages: []llm.Message{{Role: "user", Content: "hi"}}})
	if err == nil {
		s.Close()
	}
	if len(net.reqs) == 0 {
		t.Fatal("no request reached the network")
	}
	got := net.reqs[len(net.reqs)-1]
	if got.URL.Host != "api.deepseek.com" || got.Header.Get("Authorization") != "Bearer sk-deepseek-new" || got.Header.Get("X-Gateway-Key") != "" {
		t.Errorf("the model's request went to %s with %v; want api.deepseek.com, the new key, not provider.headers", got.URL, got.Header)
	}
	if routes.BaseURL() != "https://api.deepseek.com/v1" {
		t.Errorf("providers/list would say %s", routes.BaseURL())
	}
	if keyEnv.get() != "DEEPSEEK_API_KEY" {
		t.Errorf("the key is looked for under %s", keyEnv.get())
	}
	// Signing in again looks for the new provider's key, not the former
	// one that is still in the environment.
	again, err := keyEnv.newProvider(getenv, func(key string) llm.Provider { return stubKey(key) })()
	if err != nil || again != stubKey("sk-deepseek-new") {
		t.Errorf("signing in again found %v (%v), want the new key", again, err)
	}
	sec := childSecrets(keyEnv.all(), getenv, &keys)
	for _, want := range []string{"DEEPSEEK_API_KEY", "OPENAI_API_KEY"} {
		if !slices.Contains(sec.Names, want) {
			t.Errorf("children may inherit %s: %v", want, sec.Names)
		}
	}
	for _, want := range []string{"sk-deepseek-new", "sk-old-in-env"} {
		if !slices.Contains(sec.Values, want) {
			t.Errorf("children may inherit a key (%d values kept from them)", len(sec.Values))
		}
	}
}

// stubKey is a provider that is only the key it was made with.
type stubKey string

func (stubKey) Stream(context.Context, llm.Request) (llm.Stream, error) {
	return nil, errors.New("stub")
}

// The model list is asked of the chosen provider with the key typed, not
// with provider.headers; a choice the checks refuse sends nothing.
func TestEditorSetUp_Models(t *testing.T) {
	var cfg config.Config
	cfg.Provider.APIKeyEnv = "OPENAI_API_KEY"
	net := &seenDoer{status: http.StatusUnauthorized}
	su := &editorSetUp{cfg: cfg, e: env{getenv: func(string) string { return "" }, home: t.TempDir()}, list: net}
	if _, err := su.Models(t.Context(), agent.SetUpChoice{Provider: "groq", Key: "gsk-typed"}); err == nil {
		t.Error("a 401 gave a model list")
	}
	if len(net.reqs) != 1 || net.reqs[0].URL.String() != "https://api.groq.com/openai/v1/models" || net.reqs[0].Header.Get("Authorization") != "Bearer gsk-typed" {
		t.Fatalf("requests %v", net.reqs)
	}
	for _, bad := range []agent.SetUpChoice{
		{Provider: "custom", BaseURL: "file:///etc/passwd", Key: "k"},
		{Provider: "custom", Key: "k"},
		{Provider: "openai"},
		{Provider: "openai", Key: "two words"},
		{Provider: "nope", Key: "k"},
	} {
		if _, err := su.Models(t.Context(), bad); err == nil || su.Check(bad) == nil {
			t.Errorf("%+v was not refused", bad)
		}
	}
	if len(net.reqs) != 1 {
		t.Errorf("a refused choice was sent: %d requests", len(net.reqs))
	}
	if err := su.Check(agent.SetUpChoice{Provider: "ollama"}); err != nil {
		t.Errorf("ollama needs no key: %v", err)
	}
}
