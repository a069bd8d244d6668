package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
)

// stubProvider is a provider told apart by name.
type stubProvider struct{ name string }

func (stubProvider) Stream(context.Context, llm.Request) (llm.Stream, error) {
	return nil, errors.New("stub")
}

// keySource is a Config.NewProvider whose answer the test changes, as the
// user's `rebound login` would.
type keySource struct {
	p     llm.Provider
	err   error
	calls int
}

func (k *keySource) newProvider() (llm.Provider, error) {
	k.calls++
	return k.p, k.err
}

func authAgent(t *testing.T, start llm.Provider, k *keySource) *Agent {
	t.Helper()
	cfg := Config{StateDir: t.TempDir(), Provider: start, APIKeyEnv: "DEEPSEEK_API_KEY"}
	if k != nil {
		cfg.NewProvider = k.newProvider
	}
	a := New(cfg)
	t.Cleanup(func() { a.Close() })
	return a
}

func wantAuthRequired(t *testing.T, err error, parts ...string) {
	t.Helper()
	re, ok := errors.AsType[*acp.RequestError](err)
	if !ok || re.Code != acp.CodeAuthRequired {
		t.Fatalf("error = %v, want auth required (-32000)", err)
	}
	for _, p := range append(parts, `auth method "api-key"`) {
		if !strings.Contains(re.Message, p) {
			t.Errorf("message %q does not contain %q", re.Message, p)
		}
	}
}

// A key that appears after start-up is found by the next turn, without a
// restart, and kept.
func TestProvider_KeyAppearsLater(t *testing.T) {
	k := &keySource{}
	a := authAgent(t, nil, k)
	_, err := a.auth.provider()
	wantAuthRequired(t, err, "run `rebound login` in a terminal", "set DEEPSEEK_API_KEY")
	if a.auth.current() != nil {
		t.Error("currentProvider() is set with no key")
	}

	k.p = stubProvider{"stored"}
	p, err := a.auth.provider()
	if err != nil || p != (stubProvider{"stored"}) {
		t.Fatalf("provider() = %v, %v; want the stored key's", p, err)
	}
	calls := k.calls
	a.auth.provider()
	if k.calls != calls {
		t.Error("the key was looked up again although a provider was made")
	}
	if a.auth.current() != (stubProvider{"stored"}) {
		t.Errorf("currentProvider() = %v", a.auth.current())
	}
}

// A stored key that can't be used says why, with the fix.
func TestProvider_StoredKeyUnusable(t *testing.T) {
	k := &keySource{err: errors.New("/home/u/.config/rebound/credentials: permissions 0644 are too open; run `chmod 600 /home/u/.config/rebound/credentials`.")}
	_, err := authAgent(t, nil, k).auth.provider()
	wantAuthRequired(t, err, "The stored API key can't be used: /home/u/.config/rebound/credentials", "chmod 600")
}

func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	req := acp.AuthenticateRequest{MethodID: AuthMethodAPIKey}

	t.Run("no key yet, then one", func(t *testing.T) {
		k := &keySource{}
		a := authAgent(t, nil, k)
		_, err := a.Authenticate(ctx, req)
		wantAuthRequired(t, err, "No API key for the model provider")
		k.p = stubProvider{"stored"}
		if _, err := a.Authenticate(ctx, req); err != nil {
			t.Fatalf("Authenticate() = %v", err)
		}
		if a.auth.current() != (stubProvider{"stored"}) {
			t.Errorf("currentProvider() = %v, want the stored key's", a.auth.current())
		}
	})
	t.Run("a key stored anew replaces the one in use", func(t *testing.T) {
		k := &keySource{p: stubProvider{"new"}}
		a := authAgent(t, stubProvider{"start"}, k)
		if _, err := a.Authenticate(ctx, req); err != nil {
			t.Fatal(err)
		}
		if p, _ := a.auth.provider(); p != (stubProvider{"new"}) {
			t.Errorf("provider() = %v, want the new key's", p)
		}
	})
	t.Run("a key in use is kept when the stored one can't be read", func(t *testing.T) {
		k := &keySource{err: errors.New("too open")}
		a := authAgent(t, stubProvider{"start"}, k)
		if _, err := a.Authenticate(ctx, req); err != nil {
			t.Fatalf("Authenticate() = %v, want success with the key in use", err)
		}
		if p, _ := a.auth.provider(); p != (stubProvider{"start"}) {
			t.Errorf("provider() = %v", p)
		}
	})
	t.Run("without NewProvider", func(t *testing.T) {
		if _, err := authAgent(t, stubProvider{"start"}, nil).Authenticate(ctx, req); err != nil {
			t.Errorf("with a provider: %v", err)
		}
		_, err := authAgent(t, nil, nil).Authenticate(ctx, req)
		wantAuthRequired(t, err)
	})
}

func TestAuthMethods(t *testing.T) {
	methods := authAgent(t, nil, nil).AuthMethods()
	if len(methods) != 2 {
		t.Fatalf("AuthMethods() = %+v, want the agent and the terminal method", methods)
	}
	if m := methods[0]; m.ID != AuthMethodAPIKey || m.Type != "" || !strings.Contains(m.Description, "DEEPSEEK_API_KEY") || !strings.Contains(m.Description, "rebound login") {
		t.Errorf("agent method = %+v", m)
	}
	if m := methods[1]; m.ID != AuthMethodLogin || m.Type != acp.AuthTypeTerminal || len(m.Args) != 1 || m.Args[0] != "login" {
		t.Errorf("terminal method = %+v, want type terminal with args [login]", m)
	}
	// The error data names the method a client can pass to authenticate.
	_, err := authAgent(t, nil, nil).auth.provider()
	re, _ := errors.AsType[*acp.RequestError](err)
	data, _ := re.Data.(map[string]any)
	if ms, _ := data["authMethods"].([]acp.AuthMethod); len(ms) != 1 || ms[0].ID != AuthMethodAPIKey {
		t.Errorf("error data = %#v, want authMethods [api-key]", re.Data)
	}
}

// fakeCredentials is SetForgetKey's function: the credentials file of
// `rebound logout`, holding the key k returns until it is removed.
type fakeCredentials struct {
	k      *keySource
	stored bool  // a key is stored (k.p is it)
	env    bool  // the key is in the environment instead: never removed
	err    error // removing fails
	calls  int
}

func (c *fakeCredentials) forget() (Forgotten, error) {
	c.calls++
	if c.err != nil {
		return Forgotten{}, c.err
	}
	removed := c.stored
	if c.stored && !c.env {
		c.k.p, c.stored = nil, false
	}
	return Forgotten{Name: "DEEPSEEK_API_KEY", Path: "/home/u/.config/rebound/credentials", Removed: removed}, nil
}

func logoutMeta(t *testing.T, res acp.LogoutResponse) map[string]any {
	t.Helper()
	m, ok := res.Meta["rebound/logout"].(map[string]any)
	if !ok {
		t.Fatalf("_meta = %#v, want rebound/logout", res.Meta)
	}
	return m
}

// Logout removes the stored key, as `rebound logout` does, and stops using
// the key in use: the next turn and authenticate need a key again, while a
// turn that was running finishes with the key it had. Signing in again
// works without a restart.
func TestLogout_ForgetsTheStoredKey(t *testing.T) {
	ctx := t.Context()
	k := &keySource{p: stubProvider{"stored"}}
	creds := &fakeCredentials{k: k, stored: true}
	a := authAgent(t, stubProvider{"start"}, k)
	a.SetForgetKey(creds.forget)

	res, err := a.Logout(ctx, acp.LogoutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if creds.calls != 1 || creds.stored {
		t.Errorf("the stored key was not removed (%d calls)", creds.calls)
	}
	m := logoutMeta(t, res)
	msg, _ := m["message"].(string)
	for _, want := range []string{"Removed the API key for DEEPSEEK_API_KEY from /home/u/.config/rebound/credentials", "run `rebound login`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if m["removed"] != true || m["keyInEnvironment"] != false || m["credentials"] != "/home/u/.config/rebound/credentials" {
		t.Errorf("_meta = %v", m)
	}

	_, err = a.auth.provider()
	wantAuthRequired(t, err)
	_, err = a.Authenticate(ctx, acp.AuthenticateRequest{MethodID: AuthMethodAPIKey})
	wantAuthRequired(t, err)
	if p := a.auth.current(); p != (stubProvider{"start"}) {
		t.Errorf("a running turn's next request uses %v, want the key it started with", p)
	}

	k.p = stubProvider{"again"} // `rebound login`
	if p, err := a.auth.provider(); err != nil || p != (stubProvider{"again"}) {
		t.Fatalf("after signing in again provider() = %v, %v", p, err)
	}
	if p := a.auth.current(); p != (stubProvider{"again"}) {
		t.Errorf("currentProvider() = %v after signing in again", p)
	}
}

// A key in the environment Rebound was started with is not removed, and
// the message says the next prompt will use it.
func TestLogout_KeyInTheEnvironment(t *testing.T) {
	k := &keySource{p: stubProvider{"env"}}
	creds := &fakeCredentials{k: k, env: true}
	a := authAgent(t, stubProvider{"env"}, k)
	a.SetForgetKey(creds.forget)
	res, err := a.Logout(t.Context(), acp.LogoutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m := logoutMeta(t, res)
	msg, _ := m["message"].(string)
	for _, want := range []string{"No API key for DEEPSEEK_API_KEY was stored", "DEEPSEEK_API_KEY is still set in the environment", "unset it"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if m["removed"] != false || m["keyInEnvironment"] != true {
		t.Errorf("_meta = %v", m)
	}
	if p, err := a.auth.provider(); err != nil || p != (stubProvider{"env"}) {
		t.Errorf("provider() = %v, %v; want the environment's key found again", p, err)
	}
}

// When the stored key can't be removed, logout fails saying so, and nothing
// is forgotten: the user has not been signed out.
func TestLogout_RemovingFails(t *testing.T) {
	k := &keySource{p: stubProvider{"stored"}}
	creds := &fakeCredentials{k: k, stored: true, err: errors.New("/home/u/.config/rebound: permission denied")}
	a := authAgent(t, stubProvider{"stored"}, k)
	a.SetForgetKey(creds.forget)
	_, err := a.Logout(t.Context(), acp.LogoutRequest{})
	re, ok := errors.AsType[*acp.RequestError](err)
	if !ok || re.Code != acp.CodeInternalError || !strings.Contains(re.Message, "could not be removed: /home/u/.config/rebound: permission denied") || !strings.Contains(re.Message, "rebound logout") {
		t.Fatalf("error = %v, want an internal error saying what failed and what to do", err)
	}
	if p, err := a.auth.provider(); err != nil || p != (stubProvider{"stored"}) {
		t.Errorf("provider() = %v, %v; want the key still in use", p, err)
	}
	if k.calls != 0 {
		t.Error("the key was looked up again although logout failed")
	}
}

// Without SetForgetKey only the key in memory is forgotten, and the
// message claims nothing about files or the environment.
func TestLogout_WithoutForgetKey(t *testing.T) {
	k := &keySource{p: stubProvider{"found"}}
	a := authAgent(t, stubProvider{"start"}, k)
	res, err := a.Logout(t.Context(), acp.LogoutRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m := logoutMeta(t, res)
	if _, ok := m["credentials"]; ok || m["message"] != "Rebound no longer uses the API key it had; the next prompt looks for one again." {
		t.Errorf("_meta = %v", m)
	}
	if p, err := a.auth.provider(); err != nil || p != (stubProvider{"found"}) || k.calls != 1 {
		t.Errorf("provider() = %v, %v after %d lookups; want the key looked up again", p, err, k.calls)
	}
}

// The sign-in alone, with a fake key source: a turn running at logout
// keeps its provider (current), a new one must find a key again
// (provider), and a key found later replaces the one made at start-up.
func TestSignIn_LogoutRetiresTheKeyInUse(t *testing.T) {
	nop := zerolog.Nop()
	start, later := stubProvider{"start"}, stubProvider{"later"}
	k := &keySource{}
	g := &signIn{atStart: start, newProvider: k.newProvider, keyEnv: "K", log: &nop}
	if p, err := g.provider(); err != nil || p != start {
		t.Fatalf("provider = %v, %v; want the start-up one", p, err)
	}
	if _, err := g.logout(); err != nil {
		t.Fatal(err)
	}
	if p := g.current(); p != start {
		t.Errorf("after logout, current = %v; want the retired one, for the turn running", p)
	}
	_, err := g.provider()
	wantAuthRequired(t, err, "K")
	k.p = later
	if err := g.authenticate(AuthMethodAPIKey); err != nil {
		t.Fatal(err)
	}
	k.p = nil // the key found is kept, not looked for at every turn
	if p, err := g.provider(); err != nil || p != later || g.current() != later {
		t.Errorf("after authenticate, provider = %v, %v; want the key found later", p, err)
	}
}

// authenticate keeps a key in use when the stored one can't be read, and
// fails only when there is none at all.
func TestSignIn_AuthenticateKeepsTheKeyInUse(t *testing.T) {
	nop := zerolog.Nop()
	start := stubProvider{"start"}
	k := &keySource{err: errors.New("credentials file unreadable")}
	g := &signIn{atStart: start, newProvider: k.newProvider, log: &nop}
	if err := g.authenticate(AuthMethodAPIKey); err != nil || g.current() != start {
		t.Errorf("authenticate = %v, current %v; want nil, the start-up key", err, g.current())
	}
	g = &signIn{newProvider: k.newProvider, log: &nop}
	wantAuthRequired(t, g.authenticate(AuthMethodAPIKey), "can't be used", "credentials file unreadable")
	if m := g.apiKeyMethod(); !strings.Contains(m.Description, "OPENAI_API_KEY") {
		t.Errorf("the API key method names %q, want OPENAI_API_KEY when none is configured", m.Description)
	}
}

// The terminal method carries its whole command in _meta["terminal-auth"]
// when the binary is known (Zed without its ACP beta flag runs only that),
// and nothing there when it is not.
func TestAuthMethods_TerminalAuthMeta(t *testing.T) {
	a := New(Config{StateDir: t.TempDir(), Login: LoginCommand("/opt/rebound/bin/rebound", map[string]string{"XDG_CONFIG_HOME": "/x"})})
	t.Cleanup(func() { a.Close() })
	m := a.AuthMethods()[1]
	got, ok := m.Meta[acp.TerminalAuthMetaKey].(acp.TerminalAuthMeta)
	want := acp.TerminalAuthMeta{Label: "rebound login", Command: "/opt/rebound/bin/rebound", Args: []string{"login"}, Env: map[string]string{"XDG_CONFIG_HOME": "/x"}}
	if !ok || got.Label != want.Label || got.Command != want.Command || strings.Join(got.Args, " ") != "login" || got.Env["XDG_CONFIG_HOME"] != "/x" {
		t.Errorf("terminal method _meta = %#v, want %#v", m.Meta, want)
	}
	if m := authAgent(t, nil, nil).AuthMethods()[1]; m.Meta != nil {
		t.Errorf("with no command known, _meta = %#v, want none", m.Meta)
	}
}

// authenticate with the terminal method while there is still no key: the
// client sent it instead of running it, or the command stored nothing.
// The answer names the command to run, as a person can paste it.
func TestAuthenticate_TerminalMethodWithoutKey(t *testing.T) {
	ctx := context.Background()
	req := acp.AuthenticateRequest{MethodID: AuthMethodLogin}
	for _, tt := range []struct {
		name, exe, want string
		newProvider     bool
	}{
		{"known binary", "/opt/rebound/bin/rebound", "Run `/opt/rebound/bin/rebound login` in a terminal", true},
		{"a path a shell must have quoted", "/home/o'neil/my bin/rebound", `Run ` + "`" + `'/home/o'\''neil/my bin/rebound' login` + "`", true},
		{"unknown binary", "", "Run `rebound login` in a terminal", true},
		{"without NewProvider", "/opt/rebound/bin/rebound", "Run `/opt/rebound/bin/rebound login` in a terminal", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{StateDir: t.TempDir(), APIKeyEnv: "DEEPSEEK_API_KEY"}
			if tt.exe != "" {
				cfg.Login = LoginCommand(tt.exe, nil)
			}
			k := &keySource{}
			if tt.newProvider {
				cfg.NewProvider = k.newProvider
			}
			a := New(cfg)
			t.Cleanup(func() { a.Close() })
			_, err := a.Authenticate(ctx, req)
			re, ok := errors.AsType[*acp.RequestError](err)
			if !ok || re.Code != acp.CodeAuthRequired {
				t.Fatalf("Authenticate(%s) = %v, want auth required", AuthMethodLogin, err)
			}
			for _, part := range []string{tt.want, "set DEEPSEEK_API_KEY", "still has no API key"} {
				if !strings.Contains(re.Message, part) {
					t.Errorf("message %q does not contain %q", re.Message, part)
				}
			}
			// The api-key method keeps its own words.
			if _, err := a.Authenticate(ctx, acp.AuthenticateRequest{MethodID: AuthMethodAPIKey}); err == nil || strings.Contains(err.Error(), "still has no API key") {
				t.Errorf("Authenticate(api-key) = %v, want the usual auth required", err)
			}
		})
	}
	t.Run("a stored key that can't be used says why", func(t *testing.T) {
		k := &keySource{err: errors.New("credentials: permissions 0644 are too open")}
		a := New(Config{StateDir: t.TempDir(), NewProvider: k.newProvider, Login: LoginCommand("/r", nil)})
		t.Cleanup(func() { a.Close() })
		_, err := a.Authenticate(ctx, req)
		wantAuthRequired(t, err, "permissions 0644 are too open")
	})
}
