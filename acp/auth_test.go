package acp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// authAgent is a fakeAgent that signs in with AuthenticateFunc.
type authAgent struct {
	fakeAgent
	AuthenticateFunc func(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error)
	calls            []string         // the method ids Authenticate was called with
	methods          []acp.AuthMethod // nil: testMethods
}

var _ acp.Authenticator = (*authAgent)(nil)

var testMethods = []acp.AuthMethod{
	{ID: "api-key", Name: "API key", Description: "Looks for the key."},
	{ID: "terminal-login", Name: "In a terminal", Type: acp.AuthTypeTerminal, Args: []string{"login"},
		Meta: acp.Meta{acp.TerminalAuthMetaKey: acp.TerminalAuthMeta{Label: "rebound login", Command: "/bin/rebound", Args: []string{"login"}}}},
}

func (a *authAgent) AuthMethods() []acp.AuthMethod {
	if a.methods != nil {
		return a.methods
	}
	return testMethods
}

func (a *authAgent) Authenticate(ctx context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	a.calls = append(a.calls, req.MethodID)
	return a.AuthenticateFunc(ctx, req)
}

func TestServer_InitializeAuthMethods(t *testing.T) {
	const agentMethod = `{"id":"api-key","name":"API key","description":"Looks for the key."}`
	const meta = `"_meta":{"terminal-auth":{"label":"rebound login","command":"/bin/rebound","args":["login"]}}`
	const terminalMethod = `{"id":"terminal-login","name":"In a terminal","type":"terminal","args":["login"],` + meta + `}`
	// A client that knows only the _meta shape is offered the terminal
	// method as an agent one: an older client may not parse the type.
	const metaMethod = `{"id":"terminal-login","name":"In a terminal",` + meta + `}`
	noMeta := []acp.AuthMethod{testMethods[0], {ID: "terminal-login", Name: "In a terminal", Type: acp.AuthTypeTerminal, Args: []string{"login"}}}
	zed := map[string]any{"terminal": true, "auth": map[string]any{"terminal": true}, "_meta": map[string]any{"terminal_output": true, "terminal-auth": true}}
	validator := map[string]any{"terminal": true, "_meta": map[string]any{"terminal_output": true, "terminal-auth": true}}
	tests := []struct {
		name    string
		caps    any
		methods []acp.AuthMethod
		want    string
	}{
		{"no capabilities", nil, nil, `[` + agentMethod + `]`},
		{"terminal commands are not terminal auth", map[string]any{"terminal": true}, nil, `[` + agentMethod + `]`},
		{"auth.terminal false", map[string]any{"auth": map[string]any{"terminal": false}}, nil, `[` + agentMethod + `]`},
		{"auth.terminal", map[string]any{"auth": map[string]any{"terminal": true}}, nil, `[` + agentMethod + `,` + terminalMethod + `]`},
		{"zed: both shapes", zed, nil, `[` + agentMethod + `,` + terminalMethod + `]`},
		{"registry validator: _meta terminal-auth only", validator, nil, `[` + agentMethod + `,` + metaMethod + `]`},
		{"_meta terminal-auth false", map[string]any{"_meta": map[string]any{"terminal-auth": false}}, nil, `[` + agentMethod + `]`},
		{"_meta terminal-auth not a bool", map[string]any{"_meta": map[string]any{"terminal-auth": "yes"}}, nil, `[` + agentMethod + `]`},
		{"_meta only, no command to offer", validator, noMeta, `[` + agentMethod + `]`},
		{"auth.terminal, no command in _meta", map[string]any{"auth": map[string]any{"terminal": true}}, noMeta,
			`[` + agentMethod + `,{"id":"terminal-login","name":"In a terminal","type":"terminal","args":["login"]}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), &authAgent{methods: tt.methods}, acp.Config{})
				params := map[string]any{"protocolVersion": 1}
				if tt.caps != nil {
					params["clientCapabilities"] = tt.caps
				}
				w.send(request(1, acp.MethodInitialize, params))
				var reply struct {
					Result struct {
						AuthMethods json.RawMessage `json:"authMethods"`
					} `json:"result"`
				}
				line := w.recv()
				validate(t, line)
				if err := json.Unmarshal([]byte(line), &reply); err != nil {
					t.Fatal(err)
				}
				sameJSON(t, "authMethods", tt.want, string(reply.Result.AuthMethods))
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

func TestServer_AuthenticateWithAuthenticator(t *testing.T) {
	ok := func(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
		return acp.AuthenticateResponse{}, nil
	}
	noKey := func(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
		return acp.AuthenticateResponse{}, acp.NewAuthRequired("No API key: run `rebound login`")
	}
	tests := []struct {
		name      string
		terminal  bool // the client advertised auth.terminal
		params    any
		auth      func(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error)
		want      string
		wantCalls []string
	}{
		{"agent method", false, map[string]any{"methodId": "api-key"}, ok,
			`{"jsonrpc":"2.0","id":2,"result":{}}`, []string{"api-key"}},
		{"still no key", false, map[string]any{"methodId": "api-key"}, noKey,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"No API key: run ` + "`rebound login`" + `"}}`, []string{"api-key"}},
		{"unknown method", false, map[string]any{"methodId": "oauth"}, ok,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown methodId \"oauth\"; the methods are \"api-key\" (API key)"}}`, nil},
		{"terminal method not advertised to this client", false, map[string]any{"methodId": "terminal-login"}, ok,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown methodId \"terminal-login\"; the methods are \"api-key\" (API key)"}}`, nil},
		{"terminal method advertised", true, map[string]any{"methodId": "terminal-login"}, ok,
			`{"jsonrpc":"2.0","id":2,"result":{}}`, []string{"terminal-login"}},
		{"no methodId", true, map[string]any{}, ok,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: methodId is required; the methods are \"api-key\" (API key), \"terminal-login\" (In a terminal)"}}`, nil},
		{"no params", false, nil, ok,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: params are required"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &authAgent{AuthenticateFunc: tt.auth}
				w := serve(t, t.Context(), a, acp.Config{})
				w.send(request(1, acp.MethodInitialize, map[string]any{"protocolVersion": 1,
					"clientCapabilities": map[string]any{"auth": map[string]any{"terminal": tt.terminal}}}))
				w.recv()
				w.send(request(2, acp.MethodAuthenticate, tt.params))
				line := w.recv()
				validate(t, line)
				sameJSON(t, "authenticate reply", tt.want, line)
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
				if !slices.Equal(a.calls, tt.wantCalls) {
					t.Errorf("Authenticate called with %q, want %q", a.calls, tt.wantCalls)
				}
			})
		})
	}
}

// logoutAgent is an authAgent that can also sign out.
type logoutAgent struct {
	authAgent
	LogoutFunc func(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error)
	logouts    int
}

var _ acp.LogoutAuthenticator = (*logoutAgent)(nil)

func (a *logoutAgent) Logout(ctx context.Context, req acp.LogoutRequest) (acp.LogoutResponse, error) {
	a.logouts++
	return a.LogoutFunc(ctx, req)
}

// logout is advertised as the schema says (agentCapabilities.auth.logout:
// {}) by an agent that can sign out, and only by one.
func TestServer_InitializeAdvertisesLogout(t *testing.T) {
	for _, tt := range []struct {
		name  string
		agent acp.Agent
		want  string // agentCapabilities.auth; "" for none
	}{
		{"can sign out", &logoutAgent{}, `{"logout":{}}`},
		{"can only sign in", &authAgent{}, ""},
		{"no sign-in", &fakeAgent{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := serve(t, t.Context(), tt.agent, acp.Config{})
				w.send(request(1, acp.MethodInitialize, map[string]any{"protocolVersion": 1}))
				line := w.recv()
				validate(t, line)
				var reply struct {
					Result struct {
						AgentCapabilities struct {
							Auth json.RawMessage `json:"auth"`
						} `json:"agentCapabilities"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &reply); err != nil {
					t.Fatal(err)
				}
				if got := string(reply.Result.AgentCapabilities.Auth); tt.want == "" && got != "" {
					t.Errorf("agentCapabilities.auth = %s, want none", got)
				} else if tt.want != "" {
					sameJSON(t, "agentCapabilities.auth", tt.want, got)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
			})
		})
	}
}

func TestServer_Logout(t *testing.T) {
	said := func(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
		return acp.LogoutResponse{Meta: acp.Meta{"rebound/logout": map[string]any{"removed": true}}}, nil
	}
	failed := func(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
		return acp.LogoutResponse{}, &acp.RequestError{Code: acp.CodeInternalError, Message: "the credentials file can't be written"}
	}
	for _, tt := range []struct {
		name        string
		agent       func() acp.Agent
		params      any
		want        string
		wantLogouts int
	}{
		{"signs out", func() acp.Agent { return &logoutAgent{LogoutFunc: said} }, map[string]any{},
			`{"jsonrpc":"2.0","id":2,"result":{"_meta":{"rebound/logout":{"removed":true}}}}`, 1},
		{"params left out", func() acp.Agent { return &logoutAgent{LogoutFunc: said} }, nil,
			`{"jsonrpc":"2.0","id":2,"result":{"_meta":{"rebound/logout":{"removed":true}}}}`, 1},
		{"fails", func() acp.Agent { return &logoutAgent{LogoutFunc: failed} }, map[string]any{},
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"the credentials file can't be written"}}`, 1},
		{"bad params", func() acp.Agent { return &logoutAgent{LogoutFunc: said} }, []any{1},
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: params must be an object, not array"}}`, 0},
		{"not advertised", func() acp.Agent { return &authAgent{} }, map[string]any{},
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"Method not found: logout"}}`, 0}, // no data: the client shows no RichErrors
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := tt.agent()
				w := serve(t, t.Context(), a, acp.Config{})
				w.send(request(1, acp.MethodInitialize, map[string]any{"protocolVersion": 1}))
				w.recv()
				w.send(request(2, acp.MethodLogout, tt.params))
				line := w.recv()
				validate(t, line)
				sameJSON(t, "logout reply", tt.want, line)
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
				if la, ok := a.(*logoutAgent); ok && la.logouts != tt.wantLogouts {
					t.Errorf("Logout called %d times, want %d", la.logouts, tt.wantLogouts)
				}
			})
		})
	}
}
