package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/term"

	"github.com/rebound-agent/rebound/llm"
)

// LoginResult says where Login stored the key.
type LoginResult struct {
	Path string // the credentials file; "" when no key was stored
	Name string // the variable the key stands in for (provider.api_key_env)
	// Shadowed is set when that variable is set in this environment: where
	// it is, it takes precedence over the stored key.
	Shadowed bool
	// Config is the config file the provider's settings were written to,
	// "" when none were (only a key was asked for).
	Config string
	// BaseURL and Model are what was written there.
	BaseURL, Model string
	// Overridden are the variables set in this environment that override
	// what was written (OPENAI_BASE_URL, REBOUND_MODEL).
	Overridden []string
	// ModelsError says why the provider's model list could not be had,
	// when a model name was typed instead.
	ModelsError error
}

// LoginChoice is what the command line chose; empty fields are asked on a
// terminal.
type LoginChoice struct {
	Provider string // a Preset's ID
	BaseURL  string
	Model    string
	// HTTP, when set, carries the model-list request (Rebound's proxy and
	// certificate authorities); nil: a plain client.
	HTTP llm.HTTPDoer
}

// Login is `rebound login` with nothing chosen on the command line.
func Login(ctx context.Context, flags Flags, getenv func(string) string, home string, in io.Reader, prompt io.Writer) (LoginResult, error) {
	return LoginWith(ctx, flags, LoginChoice{}, getenv, home, in, prompt)
}

// LoginWith is `rebound login`. On a terminal, or when choice names a
// provider or base URL, it sets up the provider: which one (a preset, or
// a URL), its key where it needs one, and a model from the provider's own
// list (GET {base}/models), and writes base_url, model and api_key_env to
// the config file Rebound reads (SetProviderKeys). Otherwise, as before,
// it only reads the key.
//
// The key is stored in the credentials file (StoreAPIKey) under the
// variable named by provider.api_key_env, as the settings (flags, the
// config file, getenv and home, as for Load) give it. When in is a
// terminal, questions are written to prompt and the key is read without
// echo; otherwise in is read to its end, which must hold the key alone on
// one line, so a script can pipe it in. The key appears in no error and no
// output.
func LoginWith(ctx context.Context, flags Flags, choice LoginChoice, getenv func(string) string, home string, in io.Reader, prompt io.Writer) (LoginResult, error) {
	cfg, path, err := credentialsTarget(flags, getenv, home)
	if err != nil {
		return LoginResult{}, err
	}
	if choice.Provider != "" || choice.BaseURL != "" || isTerminal(in) {
		return setUp(ctx, cfg, path, flags, choice, getenv, home, in, prompt)
	}
	res := LoginResult{Path: path, Name: cfg.Provider.APIKeyEnv, Shadowed: getenv != nil && getenv(cfg.Provider.APIKeyEnv) != ""}
	key, err := readKey(ctx, in, prompt, fmt.Sprintf("API key for %s (stored in %s; not shown as you type): ", cfg.Provider.BaseURL, path))
	if err != nil {
		return LoginResult{}, err
	}
	if err := StoreAPIKey(path, res.Name, key); err != nil {
		return LoginResult{}, err
	}
	return res, nil
}

// LogoutResult says what Logout did.
type LogoutResult struct {
	Path    string
	Name    string
	Removed bool // false: no key was stored for Name
}

// Logout is `rebound logout`: it removes the key Login stored for the
// variable named by provider.api_key_env.
func Logout(flags Flags, getenv func(string) string, home string) (LogoutResult, error) {
	cfg, path, err := credentialsTarget(flags, getenv, home)
	if err != nil {
		return LogoutResult{}, err
	}
	removed, err := RemoveAPIKey(path, cfg.Provider.APIKeyEnv)
	return LogoutResult{Path: path, Name: cfg.Provider.APIKeyEnv, Removed: removed}, err
}

// credentialsTarget resolves the settings (not the key: the credentials file
// may be what the user is fixing) and the credentials file's path.
func credentialsTarget(flags Flags, getenv func(string) string, home string) (Config, string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	cfg, err := loadSettings(flags, getenv, home)
	if err != nil {
		return Config{}, "", err
	}
	path := CredentialsPath(getenv, home)
	if path == "" {
		return Config{}, "", errors.New("no place to keep the API key: neither $XDG_CONFIG_HOME nor the home directory is known; set XDG_CONFIG_HOME, or set " + cfg.Provider.APIKeyEnv + " in the environment instead")
	}
	return cfg, path, nil
}

// readKey reads the key, trimmed, and checks it (CheckAPIKey). A terminal
// is asked with prompt, without echo; anything else is read to its end, at
// most a little more than MaxAPIKeyBytes. When ctx ends first (Ctrl-C), the
// terminal gets its echo back and ctx's error is returned.
func readKey(ctx context.Context, in io.Reader, prompt io.Writer, question string) (string, error) {
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	fd, tty := terminalFd(in)
	if tty {
		state, err := term.GetState(fd)
		if err != nil {
			return "", err
		}
		defer term.Restore(fd, state)
		fmt.Fprint(prompt, question)
		go func() {
			b, err := term.ReadPassword(fd)
			done <- result{b, err}
		}()
	} else {
		go func() {
			b, err := io.ReadAll(io.LimitReader(in, MaxAPIKeyBytes+3))
			done <- result{b, err}
		}()
	}
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		// The reading goroutine stays blocked; the process is about to end,
		// and the deferred Restore gives the terminal its echo back.
		if tty {
			fmt.Fprintln(prompt)
		}
		return "", ctx.Err()
	}
	if tty {
		fmt.Fprintln(prompt) // the Enter the user typed was not echoed
	}
	if r.err != nil {
		return "", fmt.Errorf("read the API key: %w", r.err)
	}
	b := bytes.TrimSpace(r.b)
	if bytes.ContainsAny(b, "\r\n") {
		return "", errors.New("the input has more than one line; give the API key alone, on one line")
	}
	key := string(b)
	if err := CheckAPIKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// terminalFd is in's descriptor and whether it is a terminal.
func terminalFd(in io.Reader) (int, bool) {
	if f, ok := in.(interface{ Fd() uintptr }); ok {
		fd := int(f.Fd())
		return fd, term.IsTerminal(fd)
	}
	return -1, false
}

func isTerminal(in io.Reader) bool {
	_, tty := terminalFd(in)
	return tty
}
