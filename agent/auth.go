package agent

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
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

// signIn is the agent's sign-in: which provider a turn uses, made from the
// API key found at start-up or since, and what authenticate and logout
// change. It knows the configuration only through what it is given.
type signIn struct {
	mu sync.Mutex
	// atStart is Config.Provider: the provider made at start-up, nil
	// when no key was found then.
	atStart llm.Provider
	// newProvider is Config.NewProvider: a provider made from the key
	// found now, nil without an error while there is none; nil when
	// only atStart is.
	newProvider func() (llm.Provider, error)
	keyEnv      string // the variable that holds the key; "" is OPENAI_API_KEY
	log         *zerolog.Logger
	// login is Config.Login: the command that stores a key, for clients
	// that run it from the method's _meta; Command "" when unknown.
	login acp.TerminalAuthMeta

	// found is the provider made from a key found after start-up, which
	// from then on replaces atStart.
	found llm.Provider
	// signedOut is set by logout: neither found nor atStart is used by a
	// new turn until a key is found again.
	signedOut bool
	// retired is the provider in use when logout came, still used by the
	// model requests of a turn that had started before.
	retired llm.Provider
	forget  func() (Forgotten, error)
}

func newSignIn(cfg *Config) *signIn {
	return &signIn{atStart: cfg.Provider, newProvider: cfg.NewProvider, keyEnv: cfg.APIKeyEnv, log: &cfg.Logger, login: cfg.Login}
}

// Forgotten is what forgetting the stored key did (config.LogoutResult).
type Forgotten struct {
	Name    string // the variable the key was stored for
	Path    string // the credentials file
	Removed bool   // false: no key was stored
}

// SetForgetKey gives Logout what `rebound logout` does: remove the key
// stored for the provider's variable. Without it, Logout only forgets the
// key in memory. Call it before the agent serves.
func (a *Agent) SetForgetKey(forget func() (Forgotten, error)) {
	a.auth.mu.Lock()
	defer a.auth.mu.Unlock()
	a.auth.forget = forget
}

// AuthMethods implements acp.Authenticator. The terminal method also
// carries its whole command line in _meta["terminal-auth"], for clients
// that run only that (acp.TerminalAuthMetaKey): without it, Zed (unless
// its ACP beta flag is on) sends authenticate instead of opening a
// terminal, and the sign-in goes round in a circle.
func (a *Agent) AuthMethods() []acp.AuthMethod {
	login := acp.AuthMethod{
		ID:          AuthMethodLogin,
		Type:        acp.AuthTypeTerminal,
		Name:        "Enter API key in a terminal",
		Description: "Runs `rebound login`, which asks for your model provider's API key and stores it in a file only you can read.",
		Args:        LoginArgs,
	}
	if a.auth.login.Command != "" {
		login.Meta = acp.Meta{acp.TerminalAuthMetaKey: a.auth.login}
	}
	return append([]acp.AuthMethod{a.auth.apiKeyMethod(), login}, a.setUpMethods()...) // signin.go
}

// LoginCommand is Config.Login for the binary at executable (absolute),
// with env the variables `rebound login` must see to store the key where
// this Rebound looks for it (see cmd/rebound).
func LoginCommand(executable string, env map[string]string) acp.TerminalAuthMeta {
	return acp.TerminalAuthMeta{Label: "rebound login", Command: executable, Args: LoginArgs, Env: env}
}

func (g *signIn) apiKeyMethod() acp.AuthMethod {
	return acp.AuthMethod{
		ID:   AuthMethodAPIKey,
		Name: "API key",
		Description: fmt.Sprintf("Looks for your model provider's API key: %s in the environment Rebound is started with, else the key `rebound login` stored. Run `rebound login` in a terminal first.",
			g.apiKeyEnv()),
	}
}

func (g *signIn) apiKeyEnv() string { return apiKeyEnv(g.keyEnv) }

// apiKeyEnv is the variable that holds the API key, configured as name.
func apiKeyEnv(name string) string {
	if name == "" {
		return "OPENAI_API_KEY"
	}
	return name
}

// Authenticate implements acp.Authenticator. Whichever advertised method the
// client names (a client that ran the terminal method may still ask), it
// looks for the key now: found, the provider is made again from it, so a
// key stored since start-up, or stored anew after the provider refused the
// old one, is used from the next request on.
func (a *Agent) Authenticate(ctx context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, a.auth.authenticate(req.MethodID)
}

// authenticate looks for the key now, as Authenticate says; nil once
// there is one, else the auth required error.
func (g *signIn) authenticate(method string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	current := g.signedIn()
	if g.newProvider == nil {
		if current == nil {
			if method == AuthMethodLogin {
				return g.loginNotRun(nil)
			}
			return g.authRequired(nil)
		}
		return nil
	}
	p, err := g.newProvider()
	switch {
	case p != nil:
		g.found, g.signedOut, g.retired = p, false, nil
	case current != nil:
		// The key in use still works as far as anyone knows; a stored one
		// that can't be read does not take it away.
		if err != nil {
			g.log.Warn().Err(err).Msg("authenticate: keeping the API key in use")
		}
	case method == AuthMethodLogin:
		// The client sent the terminal method instead of running it (or
		// ran it and the key was not stored): say which command to run.
		return g.loginNotRun(err)
	default:
		return g.authRequired(err)
	}
	g.log.Info().Str("method", method).Msg("authenticated: an API key is available")
	return nil
}

// provider returns the provider a turn uses: the one made from a key found
// since start-up, else the one made at start-up, else one NewProvider makes from a
// key that has appeared meanwhile. With none, the error is auth required,
// saying what to do and naming the sign-in method (AuthRequiredMessage).
func (g *signIn) provider() (llm.Provider, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.signedIn(); p != nil {
		return p, nil
	}
	if g.newProvider == nil {
		return nil, g.authRequired(nil)
	}
	p, err := g.newProvider()
	if p == nil {
		return nil, g.authRequired(err)
	}
	g.found, g.signedOut, g.retired = p, false, nil
	return p, nil
}

// signedIn is the provider a new turn may use without looking for the key:
// none after logout. The caller holds mu.
func (g *signIn) signedIn() llm.Provider {
	switch {
	case g.signedOut:
		return nil
	case g.found != nil:
		return g.found
	}
	return g.atStart
}

// current is the provider in use, nil while there is none: never
// nil during a turn, which starts only once provider has found one. A key
// found by authenticate meanwhile applies from the next request; after
// Logout, a turn already running finishes with the key it had.
func (g *signIn) current() llm.Provider {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.signedIn(); p != nil {
		return p
	}
	return g.retired
}

// Logout implements acp.LogoutAuthenticator, as `rebound logout` in a
// terminal: it removes the key stored for the provider's variable
// (SetForgetKey) and forgets the key in use, so the next turn or
// authenticate looks for one again, and says what it did, in the log and in
// the result's _meta["rebound/logout"]. A key in the environment Rebound was
// started with is not Rebound's to remove: it is still found, and the
// message says so. A turn already running finishes with the key it had.
func (a *Agent) Logout(ctx context.Context, req acp.LogoutRequest) (acp.LogoutResponse, error) {
	return a.auth.logout()
}

// logout is Logout: it forgets the key in use and the stored one.
func (g *signIn) logout() (acp.LogoutResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := Forgotten{Name: g.apiKeyEnv()}
	if g.forget != nil {
		var err error
		if f, err = g.forget(); err != nil {
			return acp.LogoutResponse{}, &acp.RequestError{Code: acp.CodeInternalError,
				Message: "The stored API key could not be removed: " + strings.TrimRight(err.Error(), ". ") + "; run `rebound logout` in a terminal.", Err: err}
		}
	}
	if p := g.signedIn(); p != nil {
		g.retired = p
	}
	g.found, g.signedOut = nil, true
	meta := map[string]any{"removed": f.Removed, "variable": f.Name}
	msg := "Rebound no longer uses the API key it had; the next prompt looks for one again."
	if g.forget != nil {
		// Whether a key is still to be found: with the stored one gone,
		// only the environment can hold one, and the next turn signs in
		// with it.
		stillSet := false
		if g.newProvider != nil {
			p, _ := g.newProvider()
			stillSet = p != nil
		}
		msg = LogoutMessage(f, stillSet)
		meta["credentials"], meta["keyInEnvironment"] = f.Path, stillSet
	}
	meta["message"] = msg
	g.log.Info().Str("variable", f.Name).Str("credentials", f.Path).Bool("removed", f.Removed).Msg("logout: " + msg)
	return acp.LogoutResponse{Meta: acp.Meta{"rebound/logout": meta}}, nil
}

// LogoutMessage says what logout did: f is what forgetting the stored key
// did, stillSet whether the variable still holds a key in Rebound's
// environment, which then signs in again.
func LogoutMessage(f Forgotten, stillSet bool) string {
	var b strings.Builder
	switch {
	case f.Removed:
		fmt.Fprintf(&b, "Removed the API key for %s from %s, and Rebound no longer uses it.", f.Name, f.Path)
	case f.Path == "":
		fmt.Fprintf(&b, "No API key for %s was stored; Rebound no longer uses the one it had.", f.Name)
	default:
		fmt.Fprintf(&b, "No API key for %s was stored in %s; Rebound no longer uses the one it had.", f.Name, f.Path)
	}
	if stillSet {
		fmt.Fprintf(&b, " %s is still set in the environment Rebound was started with, so the next prompt uses it: unset it there to sign out for good.", f.Name)
	} else {
		b.WriteString(" The next prompt needs a key: run `rebound login`, or set " + f.Name + ".")
	}
	return b.String()
}

// authRequired is the -32000 error for a turn or an authenticate without a
// key; problem is why a stored key could not be used, if that is why.
func (g *signIn) authRequired(problem error) *acp.RequestError {
	e := acp.NewAuthRequired(AuthRequiredMessage(g.apiKeyEnv(), problem))
	e.Data = map[string]any{"authMethods": []acp.AuthMethod{g.apiKeyMethod()}}
	e.Err = problem
	return e
}

// loginNotRun is the auth required error for authenticate with the terminal
// method while there is still no key: the client did not run the command
// (or it did not store a key), so the message names the command itself.
func (g *signIn) loginNotRun(problem error) *acp.RequestError {
	e := g.authRequired(problem)
	if problem == nil {
		e.Message = LoginNotRunMessage(g.loginCommandLine(), g.apiKeyEnv())
	}
	return e
}

// loginCommandLine is the command to type in a terminal: the running
// binary's path when known, quoted for a POSIX shell if it needs it.
func (g *signIn) loginCommandLine() string {
	if g.login.Command == "" {
		return "rebound " + strings.Join(LoginArgs, " ")
	}
	return strings.Join(append([]string{shellQuote(g.login.Command)}, g.login.Args...), " ")
}

// shellQuote quotes s for a POSIX shell unless it is plain.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// LoginNotRunMessage says what to do when the terminal sign-in was asked
// for through authenticate and there is still no key: run command (the
// login command line) in a terminal.
func LoginNotRunMessage(command, apiKeyEnv string) string {
	return "Rebound still has no API key: the sign-in command did not store one. Run `" + command +
		"` in a terminal (it asks for the key and stores it), or set " + apiKeyEnv +
		" in the environment Rebound is started with; then sign in again, no restart needed."
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

var _ acp.LogoutAuthenticator = (*Agent)(nil)
