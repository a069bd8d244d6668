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

// AuthMethods implements acp.Authenticator (signIn.methods, and the
// set-up through forms, signin.go).
func (a *Agent) AuthMethods() []acp.AuthMethod {
	return append(a.auth.methods(), a.setUp.methods()...)
}

// AuthenticateAsking implements acp.FormAuthenticator: the client can
// show forms, so a sign-in may set up the provider through them
// (formSetUp.authenticate).
func (a *Agent) AuthenticateAsking(ctx context.Context, req acp.AuthenticateRequest, c acp.Client, ask acp.FormAsker) (acp.AuthenticateResponse, error) {
	return a.setUp.authenticate(ctx, req, c, ask)
}

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

var _ acp.ProviderConfigurer = (*Agent)(nil)

// ProvidersConfigurable reports whether providers/* are served: only with
// Config.Routes.
func (a *Agent) ProvidersConfigurable() bool { return a.providers.configurable() }

// ListProviders lists MainProvider and where it sends requests now
// (providerRouter.list).
func (a *Agent) ListProviders(ctx context.Context, req acp.ListProvidersRequest) (acp.ListProvidersResponse, error) {
	return a.providers.list(), nil
}

// SetProvider routes MainProvider's requests as the client says
// (providerRouter.set).
func (a *Agent) SetProvider(ctx context.Context, req acp.SetProviderRequest) (acp.SetProviderResponse, error) {
	return acp.SetProviderResponse{}, a.providers.set(req)
}

// DisableProvider refuses: MainProvider is required (providerRouter.disable).
func (a *Agent) DisableProvider(ctx context.Context, req acp.DisableProviderRequest) (acp.DisableProviderResponse, error) {
	return acp.DisableProviderResponse{}, a.providers.disable(req)
}

var _ acp.SessionReopener = (*Agent)(nil)

// ReopenOnUse makes session methods open, from its log, a session this
// process does not hold (acp.SessionReopener, reopen.go).
func (a *Agent) ReopenOnUse() { a.sessions.on.Store(true) }

// SetSessionMode serves session/set_mode (optionSetter.setMode).
func (a *Agent) SetSessionMode(ctx context.Context, req acp.SetSessionModeRequest, c acp.Client) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, a.options.setMode(ctx, req, c)
}

// SetSessionConfigOption serves session/set_config_option and answers with
// every option (optionSetter.setConfigOption).
func (a *Agent) SetSessionConfigOption(ctx context.Context, req acp.SetSessionConfigOptionRequest, c acp.Client) (acp.SetSessionConfigOptionResponse, error) {
	opts, err := a.options.setConfigOption(ctx, req, c)
	return acp.SetSessionConfigOptionResponse{ConfigOptions: opts}, err
}

var _ acp.SessionAnswerer = (*Agent)(nil)

// SessionAnswered follows the answer to a session/new, load or resume: the
// slash commands, and the provider's models when the answer offered only
// those known then (afterAnswer.answered).
func (a *Agent) SessionAnswered(ctx context.Context, sessionID string, c acp.Client) {
	a.answers.answered(ctx, sessionID, c)
}

// Prompt runs one turn (prompt, turn.go).
func (a *Agent) Prompt(ctx context.Context, req acp.PromptRequest, c acp.Client) (acp.PromptResponse, error) {
	return prompt(ctx, a, req, c)
}

// The session methods beyond new and prompt.
var (
	_ acp.SessionLister  = (*Agent)(nil)
	_ acp.SessionResumer = (*Agent)(nil)
	_ acp.SessionCloser  = (*Agent)(nil)
	_ acp.SessionDeleter = (*Agent)(nil)
	_ acp.SessionForker  = (*Agent)(nil)
)

// LoadSession opens the session and replays its committed conversation
// before answering (sessionOpener.load, load.go).
func (a *Agent) LoadSession(ctx context.Context, req acp.LoadSessionRequest, c acp.Client) (acp.LoadSessionResponse, error) {
	return a.opener.load(ctx, req, c, a.cfg.WaitStatus)
}

// ListSessions lists the sessions of the state directory a page at a time
// (listSessions, lifecycle.go).
func (a *Agent) ListSessions(ctx context.Context, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return listSessions(a.store.index, a.store.dir, req)
}

// ResumeSession opens the session again, replaying nothing
// (sessionOpener.resume).
func (a *Agent) ResumeSession(ctx context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return a.opener.resume(req)
}

// CloseSession frees what the session holds in this process
// (sessionRemover.close).
func (a *Agent) CloseSession(ctx context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, a.remover.close(req.SessionID)
}

// DeleteSession removes the session's log and index entry
// (sessionRemover.delete).
func (a *Agent) DeleteSession(ctx context.Context, req acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	return acp.DeleteSessionResponse{}, a.remover.delete(req.SessionID)
}

// ForkSession serves session/fork (unstable ACP): a new session starting
// with a copy of the parent's finished turns (forker.fork, fork.go).
func (a *Agent) ForkSession(ctx context.Context, req acp.ForkSessionRequest) (acp.ForkSessionResponse, error) {
	return a.forker.fork(req)
}

// NewSession creates the session's log before answering
// (sessionMaker.create, lifecycle.go).
func (a *Agent) NewSession(ctx context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	return a.maker.create(req)
}

// Close closes every open session log.
func (a *Agent) Close() error { return a.store.close() }
