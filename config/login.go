package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"golang.org/x/term"
)

// LoginResult says where Login stored the key.
type LoginResult struct {
	Path string // the credentials file
	Name string // the variable the key stands in for (provider.api_key_env)
	// Shadowed is set when that variable is set in this environment: where
	// it is, it takes precedence over the stored key.
	Shadowed bool
}

// Login is `rebound login`: it reads an API key from in and stores it in the
// credentials file (StoreAPIKey) under the variable named by
// provider.api_key_env, as the settings (flags, the config file, getenv and
// home, as for Load) give it. When in is a terminal, prompt is written to
// the terminal's user and the key is read without echo; otherwise in is read
// to its end, which must hold the key alone on one line, so a script can
// pipe it in. The key appears in no error and no output.
func Login(ctx context.Context, flags Flags, getenv func(string) string, home string, in io.Reader, prompt io.Writer) (LoginResult, error) {
	cfg, path, err := credentialsTarget(flags, getenv, home)
	if err != nil {
		return LoginResult{}, err
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
	fd, tty := -1, false
	if f, ok := in.(interface{ Fd() uintptr }); ok {
		fd = int(f.Fd())
		tty = term.IsTerminal(fd)
	}
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
