package acp

import (
	"context"
	"strings"
)

// AuthMethod is one entry of initialize's authMethods. A method with no
// Type is an agent method: the client calls authenticate with its ID and the
// agent signs in by itself. Type AuthTypeTerminal is a method the client
// runs as the agent's own command, with Args appended and Env added, in a
// terminal the user types into; exit status 0 means success. A client is
// not meant to pass it to authenticate, but one that can't run it may (Zed
// does, for a terminal method without TerminalAuthMeta, unless its ACP beta
// flag is on). Meta may carry the command line itself for clients on the
// older shape (TerminalAuthMetaKey).
type AuthMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Type        string `json:"type,omitempty"`
	// Args and Env are for terminal methods only.
	Args []string          `json:"args,omitempty"`
	Env  map[string]string `json:"env,omitempty"`
	Meta Meta              `json:"_meta,omitempty"`
	// FormOnly methods are offered only to clients that advertise
	// elicitation.form (elicitation.go); not sent.
	FormOnly bool `json:"-"`
}

// AuthTypeTerminal is AuthMethod.Type of a terminal method. The server
// advertises such a method only to a client whose capabilities have
// auth.terminal.
const AuthTypeTerminal = "terminal"

// AuthCapabilities is clientCapabilities.auth: the method types beyond
// agent that the client can handle.
type AuthCapabilities struct {
	Terminal bool `json:"terminal,omitempty"`
	Meta     Meta `json:"_meta,omitempty"`
}

// TerminalAuthMetaKey is the _meta key of the sign-in command in the shape
// clients used before terminal methods were in the protocol: the client
// advertises clientCapabilities._meta["terminal-auth"] = true, and runs the
// TerminalAuthMeta of a method that carries one instead of sending
// authenticate. Zed still does so for every method unless its ACP beta flag
// is on; the ACP registry's validator advertises only this.
const TerminalAuthMetaKey = "terminal-auth"

// TerminalAuthMeta is AuthMethod._meta["terminal-auth"]: the whole command
// line, since a client on this shape does not start the agent's own command.
// Label and Command are required by the clients that read it.
type TerminalAuthMeta struct {
	Label   string            `json:"label"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env,omitempty"`
}

// AuthenticateRequest is the params of authenticate.
type AuthenticateRequest struct {
	MethodID string `json:"methodId"`
	Meta     Meta   `json:"_meta,omitempty"`
}

// AuthenticateResponse is the result of authenticate.
type AuthenticateResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// Authenticator is an Agent that can sign in: initialize advertises its
// methods (terminal ones only to clients that can run them), and it serves
// authenticate for them. Without it authMethods is empty and authenticate
// is refused.
type Authenticator interface {
	// AuthMethods lists the methods, the same for every call.
	AuthMethods() []AuthMethod
	// Authenticate signs in with req.MethodID, which the server has checked
	// is one advertised to this client. While signing in is still not
	// possible it fails with auth required (NewAuthRequired) saying what the
	// user must do.
	Authenticate(ctx context.Context, req AuthenticateRequest) (AuthenticateResponse, error)
}

// AgentAuthCapabilities is agentCapabilities.auth. A non-nil Logout is
// sent as {}, which the schema reads as "logout is supported".
type AgentAuthCapabilities struct {
	Logout *struct{} `json:"logout,omitempty"`
	Meta   Meta      `json:"_meta,omitempty"`
}

// LogoutRequest is the params of logout, which may be left out.
type LogoutRequest struct {
	Meta Meta `json:"_meta,omitempty"`
}

// LogoutResponse is the result of logout; the schema gives it only _meta.
type LogoutResponse struct {
	Meta Meta `json:"_meta,omitempty"`
}

// LogoutAuthenticator is an Authenticator that can also sign out: the
// server advertises agentCapabilities.auth.logout and serves logout with it.
type LogoutAuthenticator interface {
	Authenticator
	// Logout forgets the credentials signing in found, so that the next
	// request needs signing in again.
	Logout(ctx context.Context, req LogoutRequest) (LogoutResponse, error)
}

// authCapabilities advertises logout when agent can sign out; nil
// otherwise, which the schema reads as no support.
func authCapabilities(agent Agent) *AgentAuthCapabilities {
	if _, ok := agent.(LogoutAuthenticator); ok {
		return &AgentAuthCapabilities{Logout: &struct{}{}}
	}
	return nil
}

// authMethods are the methods agent offers to a client with caps; never
// nil, since the schema's default for a missing list is the empty one anyway.
func authMethods(agent Agent, caps ClientCapabilities) []AuthMethod {
	methods := []AuthMethod{}
	if a, ok := agent.(Authenticator); ok {
		for _, m := range a.AuthMethods() {
			if m.FormOnly && !caps.ElicitationForm() {
				continue
			}
			if m.Type == AuthTypeTerminal && !caps.TerminalAuth() {
				if !caps.TerminalAuthByMeta() || m.Meta[TerminalAuthMetaKey] == nil {
					continue
				}
				// A client on the older shape may not know the terminal
				// type: the method is an agent one there, and the command
				// is in its _meta.
				m.Type, m.Args, m.Env = "", nil, nil
			}
			methods = append(methods, m)
		}
	}
	return methods
}

// methodList names methods for an error message: "api-key" (API key), ...
func methodList(methods []AuthMethod) string {
	if len(methods) == 0 {
		return "none"
	}
	parts := make([]string, len(methods))
	for i, m := range methods {
		parts[i] = quote(m.ID) + " (" + m.Name + ")"
	}
	return strings.Join(parts, ", ")
}
