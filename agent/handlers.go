package agent

import (
	"context"

	"github.com/rebound-agent/rebound/acp"
)

// The ACP handlers: each hands the request to the part that serves it.

var (
	_ acp.Agent               = (*Agent)(nil)
	_ acp.LogoutAuthenticator = (*Agent)(nil)
)

// SetForgetKey gives Logout what `rebound logout` does: remove the key
// stored for the provider's variable. Without it, Logout only forgets the
// key in memory. Call it before the agent serves.
func (a *Agent) SetForgetKey(forget func() (Forgotten, error)) { a.auth.setForget(forget) }

// AuthMethods implements acp.Authenticator (signIn.methods).
func (a *Agent) AuthMethods() []acp.AuthMethod { return a.auth.methods() }

// Authenticate implements acp.Authenticator: it looks for the key now
// (signIn.authenticate).
func (a *Agent) Authenticate(ctx context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, a.auth.authenticate(req.MethodID)
}

// Logout implements acp.LogoutAuthenticator: it forgets the key in use and
// the stored one (signIn.logout).
func (a *Agent) Logout(ctx context.Context, req acp.LogoutRequest) (acp.LogoutResponse, error) {
	return a.auth.logout()
}
