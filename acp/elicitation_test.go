package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/rebound-agent/rebound/acp"
)

// formAgent is an authAgent that also signs in through forms: it asks
// form and returns the answer (or the error) it got.
type formAgent struct {
	authAgent
	form    acp.Form
	asked   []string // the method ids AuthenticateAsking was called with
	answer  acp.FormAnswer
	askErr  error
	withCli bool // it was given a Client
}

var _ acp.FormAuthenticator = (*formAgent)(nil)

func (a *formAgent) AuthenticateAsking(ctx context.Context, req acp.AuthenticateRequest, c acp.Client, ask acp.FormAsker) (acp.AuthenticateResponse, error) {
	a.asked = append(a.asked, req.MethodID)
	a.withCli = c != nil
	a.answer, a.askErr = ask.AskForm(ctx, "Which provider?", a.form)
	return acp.AuthenticateResponse{}, a.askErr
}

var providerForm = acp.Form{Title: "Provider", Fields: []acp.FormField{
	{Name: "provider", Type: "string", Title: "Provider", MaxLength: 32, Options: []acp.FormOption{{Value: "openai", Title: "OpenAI"}, {Value: "custom", Title: "Another"}}, Required: true},
	{Name: "apiKey", Type: "string", Title: "API key", MaxLength: 16},
	{Name: "remember", Type: "boolean", Title: "Remember"},
}}

var formMethods = append(slices.Clone(testMethods), acp.AuthMethod{ID: "setup", Name: "Set up here", FormOnly: true})

// A client that advertises elicitation.form is offered the form-only
// method, and its authenticate asks through elicitation/create tied to the
// authenticate request; the answer is checked against the form. Without
// the capability nothing changes: the method is not offered, and
// Authenticate (not AuthenticateAsking) serves.
func TestServer_AuthenticateAsking(t *testing.T) {
	okAuth := func(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
		return acp.AuthenticateResponse{}, nil
	}
	for _, tt := range []struct {
		name      string
		caps      map[string]any
		method    string
		answer    string // the editor's result; "" when no form is expected
		wantReply string
		wantValue map[string]any
		wantErr   string // in the agent's error from AskForm
	}{
		{name: "no elicitation", caps: map[string]any{}, method: "api-key", wantReply: `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{name: "url only", caps: map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}, method: "setup",
			wantReply: `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"Invalid params: unknown methodId \"setup\"; the methods are \"api-key\" (API key)"}}`},
		{name: "accept", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method: "setup",
			answer: `{"action":"accept","content":{"provider":"custom","apiKey":"sk-0123456789","remember":true}}`, wantReply: `{"jsonrpc":"2.0","id":2,"result":{}}`,
			wantValue: map[string]any{"provider": "custom", "apiKey": "sk-0123456789", "remember": true}},
		{name: "decline", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method: "api-key",
			answer: `{"action":"decline"}`, wantReply: `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{name: "not an option", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method: "setup",
			answer: `{"action":"accept","content":{"provider":"http://evil.example"}}`, wantErr: "content.provider: is not one of the options offered"},
		{name: "too long: the value is not echoed", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method: "setup",
			answer: `{"action":"accept","content":{"provider":"openai","apiKey":"sk-much-too-long-secret"}}`, wantErr: "content.apiKey: is 23 characters long; the most is 16"},
		{name: "unknown action", caps: map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}, method: "setup",
			answer: `{"action":"_maybe"}`, wantErr: `action "_maybe" is not accept, decline or cancel`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := &formAgent{authAgent: authAgent{AuthenticateFunc: okAuth, methods: formMethods}, form: providerForm}
				w := serve(t, t.Context(), a, acp.Config{})
				w.send(request(1, acp.MethodInitialize, map[string]any{"protocolVersion": 1, "clientCapabilities": tt.caps}))
				w.recv()
				w.send(request(2, acp.MethodAuthenticate, map[string]any{"methodId": tt.method}))
				if tt.answer != "" {
					call := w.recvCall()
					var p struct {
						Mode      string          `json:"mode"`
						RequestID json.RawMessage `json:"requestId"`
					}
					json.Unmarshal(call.Params, &p)
					if call.Method != acp.MethodElicitationCreate || p.Mode != "form" || string(p.RequestID) != "2" {
						t.Errorf("the editor was asked %s %s, want a form tied to request 2", call.Method, call.Params)
					}
					w.answer(call.ID, tt.answer)
				}
				line := w.recv()
				if tt.wantErr == "" {
					sameJSON(t, "authenticate reply", tt.wantReply, line)
				}
				if err := w.end(); err != nil {
					t.Errorf("Serve() = %v", err)
				}
				switch {
				case tt.answer == "" && (len(a.asked) > 0):
					t.Errorf("AuthenticateAsking was called without the capability")
				case tt.answer != "" && (len(a.asked) != 1 || !a.withCli):
					t.Errorf("AuthenticateAsking calls %q (client given: %v), want one", a.asked, a.withCli)
				}
				if tt.wantValue != nil && (a.answer.Action != acp.ElicitationAccept || !sameValues(a.answer.Values, tt.wantValue)) {
					t.Errorf("answer %+v, want accepted %v", a.answer, tt.wantValue)
				}
				if tt.wantErr != "" {
					if a.askErr == nil || !strings.Contains(a.askErr.Error(), tt.wantErr) || !errors.Is(a.askErr, acp.ErrInvalidResult) {
						t.Errorf("AskForm error %v, want one saying %q", a.askErr, tt.wantErr)
					}
					if a.askErr != nil && strings.Contains(a.askErr.Error(), "secret") {
						t.Errorf("the error echoes the value: %v", a.askErr)
					}
				}
			})
		})
	}
}

func sameValues(got, want map[string]any) bool {
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	return string(g) == string(w)
}

func TestClientCapabilities_ElicitationForm(t *testing.T) {
	for raw, want := range map[string]bool{
		``:                              false,
		`null`:                          false,
		`{}`:                            false,
		`{"form":{}}`:                   true,
		`{"form":{"_meta":{"x":1}}}`:    true,
		`{"form":null}`:                 false,
		`{"form":true}`:                 false,
		`{"url":{}}`:                    false,
		`"yes"`:                         false,
		`{"form":{},"url":{},"x":"y"}`:  true,
		`[{"form":{}}]`:                 false,
		`{"form":"{}"}`:                 false,
		`{"form":{}, "form2":{"a":[]}}`: true,
	} {
		caps := `{}`
		if raw != "" {
			caps = `{"elicitation":` + raw + `}`
		}
		var c acp.ClientCapabilities
		if err := json.Unmarshal([]byte(caps), &c); err != nil {
			t.Errorf("%s: capabilities do not decode: %v", caps, err)
			continue
		}
		if got := c.ElicitationForm(); got != want {
			t.Errorf("%s: ElicitationForm() = %v, want %v", caps, got, want)
		}
	}
}
