package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/llm"
)

// Rebound's sign-in methods, advertised in initialize's authMethods. The
// API key is what Rebound signs in with: found in the environment at
// start-up, or stored by `rebound login` (the credentials file, see
// config.APIKey), possibly while the editor is already running Rebound.
const (
	// AuthMethodAPIKey is the agent method: authenticate looks for the key
	// again and succeeds once there is one, and later turns use it without
	// a restart.
	AuthMethodAPIKey = "api-key"
	// AuthMethodLogin is the terminal method, offered only to clients that
	// can run one: the client runs `rebound login` (LoginArgs) in a
	// terminal, which asks for the key and stores it.
	AuthMethodLogin = "terminal-login"
)

// LoginArgs are the arguments that make the rebound binary ask for the API
// key and store it; a client running the terminal method appends them to
// the command it starts Rebound with, so that command must not carry a
// subcommand of its own (plain `rebound` serves).
var LoginArgs = []string{"login"}

// authState holds the provider made from a key found after start-up, which
// from then on replaces Config.Provider.
type authState struct {
	mu       sync.Mutex
	provider llm.Provider
}

// AuthMethods implements acp.Authenticator.
func (a *Agent) AuthMethods() []acp.AuthMethod {
	return []acp.AuthMethod{
		a.apiKeyMethod(),
		{
			ID:          AuthMethodLogin,
			Type:        acp.AuthTypeTerminal,
			Name:        "Enter API key in a terminal",
			Description: "Runs `rebound login`, which asks for your model provider's API key and stores it in a file only you can read.",
			Args:        LoginArgs,
		},
	}
}

func (a *Agent) apiKeyMethod() acp.AuthMethod {
	return acp.AuthMethod{
		ID:   AuthMethodAPIKey,
		Name: "API key",
		Description: fmt.Sprintf("Looks for your model provider's API key: %s in the environment Rebound is started with, else the key `rebound login` stored. Run `rebound login` in a terminal first.",
			a.apiKeyEnv()),
	}
}

func (a *Agent) apiKeyEnv() string {
	if a.cfg.APIKeyEnv == "" {
		return "OPENAI_API_KEY"
	}
	return a.cfg.APIKeyEnv
}

// Authenticate implements acp.Authenticator. Whichever advertised method the
// client names (a client that ran the terminal method may still ask), it
// looks for the key now: found, the provider is made again from it, so a
// key stored since start-up, or stored anew after the provider refused the
// old one, is used from the next request on.
func (a *Agent) Authenticate(ctx context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	a.auth.mu.Lock()
	defer a.auth.mu.Unlock()
	current := a.auth.provider
	if current == nil {
		current = a.cfg.Provider
	}
	if a.cfg.NewProvider == nil {
		if current == nil {
			return acp.AuthenticateResponse{}, a.authRequired(nil)
		}
		return acp.AuthenticateResponse{}, nil
	}
	p, err := a.cfg.NewProvider()
	switch {
	case p != nil:
		a.auth.provider = p
	case current != nil:
		// The key in use still works as far as anyone knows; a stored one
		// that can't be read does not take it away.
		if err != nil {
			a.cfg.Logger.Warn().Err(err).Msg("authenticate: keeping the API key in use")
		}
	default:
		return acp.AuthenticateResponse{}, a.authRequired(err)
	}
	a.cfg.Logger.Info().Str("method", req.MethodID).Msg("authenticated: an API key is available")
	return acp.AuthenticateResponse{}, nil
}

// provider returns the provider a turn uses: the one made from a key found
// since start-up, else Config.Provider, else one NewProvider makes from a
// key that has appeared meanwhile. With none, the error is auth required,
// saying what to do and naming the sign-in method (AuthRequiredMessage).
func (a *Agent) provider() (llm.Provider, error) {
	a.auth.mu.Lock()
	defer a.auth.mu.Unlock()
	if a.auth.provider != nil {
		return a.auth.provider, nil
	}
	if a.cfg.Provider != nil {
		return a.cfg.Provider, nil
	}
	if a.cfg.NewProvider == nil {
		return nil, a.authRequired(nil)
	}
	p, err := a.cfg.NewProvider()
	if p == nil {
		return nil, a.authRequired(err)
	}
	a.auth.provider = p
	return p, nil
}

// currentProvider is the provider in use, nil while there is none: never
// nil during a turn, which starts only once provider has found one. A key
// found by authenticate meanwhile applies from the next request.
func (a *Agent) currentProvider() llm.Provider {
	a.auth.mu.Lock()
	defer a.auth.mu.Unlock()
	if a.auth.provider != nil {
		return a.auth.provider
	}
	return a.cfg.Provider
}

// authRequired is the -32000 error for a turn or an authenticate without a
// key; problem is why a stored key could not be used, if that is why.
func (a *Agent) authRequired(problem error) *acp.RequestError {
	e := acp.NewAuthRequired(AuthRequiredMessage(a.apiKeyEnv(), problem))
	e.Data = map[string]any{"authMethods": []acp.AuthMethod{a.apiKeyMethod()}}
	e.Err = problem
	return e
}

// AuthRequiredMessage says what to do when there is no API key for the
// variable apiKeyEnv, or, when problem is not nil, why the stored one can't
// be used (the credentials file's path and the fix, never the key); either
// way it names the sign-in method that looks for the key again.
func AuthRequiredMessage(apiKeyEnv string, problem error) string {
	const then = "then try again (signing in with auth method \"" + AuthMethodAPIKey + "\" looks for the key without a restart)."
	if problem != nil {
		return "The stored API key can't be used: " + strings.TrimRight(problem.Error(), ". ") + "; " + then
	}
	return "No API key for the model provider: run `rebound login` in a terminal, or set " + apiKeyEnv +
		" in the environment Rebound is started with; " + then
}

var _ acp.Authenticator = (*Agent)(nil)
