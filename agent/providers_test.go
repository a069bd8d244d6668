package agent_test

import (
	"os"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent"
	"github.com/rebound-agent/rebound/session"
)

type fakeRoutes struct {
	base    string
	headers map[string]string
}

func (r *fakeRoutes) BaseURL() string { return r.base }
func (r *fakeRoutes) Route(base string, h map[string]string) error {
	r.base, r.headers = base, h
	return nil
}

// providers/*: one required provider, main, which set routes and disable
// refuses; other ids and protocols are refused; without Config.Routes the
// methods are not configurable.
func TestAgent_Providers(t *testing.T) {
	if newAgent(t, t.TempDir(), okProvider()).ProvidersConfigurable() {
		t.Error("configurable without Routes")
	}
	routes := &fakeRoutes{base: "https://api.example.com/v1"}
	a := agent.New(agent.Config{StateDir: t.TempDir(), Model: "m", Provider: okProvider(), Routes: routes, Logger: zerolog.Nop()})
	t.Cleanup(func() { a.Close() })
	list, err := a.ListProviders(t.Context(), acp.ListProvidersRequest{})
	if err != nil || len(list.Providers) != 1 || list.Providers[0].ProviderID != agent.MainProvider || !list.Providers[0].Required ||
		list.Providers[0].Current == nil || list.Providers[0].Current.BaseURL != routes.base {
		t.Fatalf("ListProviders = %+v, %v", list, err)
	}
	h := map[string]string{"X-A": "b"}
	if _, err := a.SetProvider(t.Context(), acp.SetProviderRequest{ProviderID: "main", APIType: "openai", BaseURL: "https://gw/v1", Headers: h}); err != nil {
		t.Fatal(err)
	}
	if routes.base != "https://gw/v1" || routes.headers["X-A"] != "b" {
		t.Errorf("routes after set: %+v", routes)
	}
	list, _ = a.ListProviders(t.Context(), acp.ListProvidersRequest{})
	if list.Providers[0].Current.BaseURL != "https://gw/v1" {
		t.Errorf("list after set: %+v", list.Providers[0].Current)
	}
	_, err = a.SetProvider(t.Context(), acp.SetProviderRequest{ProviderID: "main", APIType: "anthropic", BaseURL: "https://x/v1"})
	wantCode(t, "set with another protocol", err, acp.CodeInvalidParams)
	_, err = a.SetProvider(t.Context(), acp.SetProviderRequest{ProviderID: "openai", APIType: "openai", BaseURL: "https://x/v1"})
	wantCode(t, "set of an unknown provider", err, acp.CodeInvalidParams)
	if routes.base != "https://gw/v1" {
		t.Errorf("a refused set changed the route: %s", routes.base)
	}
	_, err = a.DisableProvider(t.Context(), acp.DisableProviderRequest{ProviderID: "main"})
	wantCode(t, "disable of the required provider", err, acp.CodeInvalidParams)
	_, err = a.DisableProvider(t.Context(), acp.DisableProviderRequest{ProviderID: "other"})
	wantCode(t, "disable of an unknown provider", err, acp.CodeInvalidParams)
}

// session/list returns the additional directories a session was made
// with, in order, from the index and from the log alike.
func TestAgent_ListSessionsAdditionalDirectories(t *testing.T) {
	dir := t.TempDir()
	a := newAgent(t, dir, okProvider())
	res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: "/p", AdditionalDirectories: []string{"/b", "/a"}})
	if err != nil {
		t.Fatal(err)
	}
	mustPrompt(t, a, res.SessionID, "hi")
	for _, name := range []string{"this process", "a fresh one, without the index"} {
		ag := a
		if name != "this process" {
			if err := os.Remove(session.IndexPath(dir)); err != nil {
				t.Fatal(err)
			}
			ag = newAgent(t, dir, okProvider())
		}
		list := mustListSessions(t, ag, acp.ListSessionsRequest{})
		if len(list.Sessions) != 1 || len(list.Sessions[0].AdditionalDirectories) != 2 ||
			list.Sessions[0].AdditionalDirectories[0] != "/b" || list.Sessions[0].AdditionalDirectories[1] != "/a" {
			t.Errorf("%s lists %+v", name, list.Sessions)
		}
	}
}
