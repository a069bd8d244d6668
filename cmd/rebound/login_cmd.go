package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/rebound-agent/rebound/config"
)

func init() {
	register(command{name: "login", summary: "choose the model provider and model, and store its API key (asks for them)", run: runLogin})
	register(command{name: "logout", summary: "remove the API key 'rebound login' stored", run: runLogout})
}

const loginUsage = `Usage: rebound login [--config FILE] [--provider ID] [--base-url URL] [--model NAME]

On a terminal, asks which model provider to use (OpenAI, DeepSeek, OpenRouter,
Groq, Mistral, Together, Ollama or LM Studio on this machine, or another URL),
its API key where it needs one (not shown as you type), and a model from the
provider's own list (GET {base}/models; when the list cannot be had it says
why and asks for a name). It writes provider.base_url, provider.model and
provider.api_key_env to the config file Rebound reads (--config, else
$REBOUND_CONFIG, else $XDG_CONFIG_HOME/rebound/config.toml or
~/.config/rebound/config.toml, created if missing), changing no other line or
comment of it, and stores the key where Rebound looks for it when the
environment has none: in $XDG_CONFIG_HOME/rebound/credentials, else
~/.config/rebound/credentials, a file only you can read (mode 0600), under the
name of the variable provider.api_key_env names. A variable set in the
environment still takes precedence. Ollama and LM Studio need no key: a
placeholder is stored.

For a script: --provider (and --base-url, --model) choose without asking, and
the key is one line on stdin:
  rebound login --provider deepseek --model deepseek-chat < key.txt
Without --provider or --base-url, and not on a terminal, only the key is read
from stdin and stored, as before: rebound login < key.txt

An editor's sign-in runs this command in a terminal when the editor can; a
Rebound the editor is already running uses the key from its next prompt or
sign-in. Prints the file's path. Exit status: 0 when the key was stored, 1 if
it was not, 2 for a usage error.

Flags:
`

const logoutUsage = `Usage: rebound logout [--config FILE]

Removes the API key 'rebound login' stored for the variable provider.api_key_env
names (default OPENAI_API_KEY), and the credentials file once it holds no key.
A Rebound already running keeps the key it has until it is restarted. Exit
status: 0 (also when no key was stored), 1 on failure, 2 for a usage error.

Flags:
`

// parseCredentialsFlags parses the flag login and logout share: the config
// file, which may name another variable (provider.api_key_env); login's
// own flags are bound on fs by extra.
func parseCredentialsFlags(name, usage string, args []string, s streams, extra ...func(*flag.FlagSet)) (config.Flags, int, bool) {
	fs := flag.NewFlagSet("rebound "+name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	for _, x := range extra {
		x(fs)
	}
	path := fs.String("config", "", "TOML config file whose provider.api_key_env names the variable the key is for (overrides "+config.EnvConfig+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return config.Flags{}, 0, false
		}
		return config.Flags{}, 2, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(s.err, "rebound %s: unexpected argument %q\n", name, fs.Arg(0))
		fs.Usage()
		return config.Flags{}, 2, false
	}
	var f config.Flags
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "config" {
			f.ConfigPath = path
		}
	})
	return f, 0, true
}

func runLogin(ctx context.Context, args []string, s streams, e env) int {
	var choice config.LoginChoice
	flags, code, ok := parseCredentialsFlags("login", loginUsage, args, s, func(fs *flag.FlagSet) {
		fs.StringVar(&choice.Provider, "provider", "", "the provider, without asking: one of "+config.PresetIDs())
		fs.StringVar(&choice.BaseURL, "base-url", "", "the provider's base URL (another server, or a preset's at another address)")
		fs.StringVar(&choice.Model, "model", "", "the model, without asking (needed when stdin is not a terminal)")
	})
	if !ok {
		return code
	}
	// The model list goes through the client Rebound's requests do: its
	// proxy and certificate authorities, as the settings give them.
	if cfg, err := config.Load(flags, e.getenv, e.home); err == nil {
		if client, _, err := netTransports(cfg, e); err == nil {
			choice.HTTP = client
		}
	}
	if e.httpClient != nil {
		choice.HTTP = e.httpClient
	}
	res, err := config.LoginWith(ctx, flags, choice, e.getenv, e.home, s.in, s.err)
	if err != nil {
		fmt.Fprintf(s.err, "rebound login: %v\n", err)
		return 1
	}
	if res.Config != "" {
		fmt.Fprintf(s.out, "Set provider.base_url = %q, provider.model = %q and provider.api_key_env = %q in %s\n", res.BaseURL, res.Model, res.Name, res.Config)
	}
	fmt.Fprintf(s.out, "Stored the API key for %s in %s\n", res.Name, res.Path)
	if res.Shadowed {
		fmt.Fprintf(s.err, "Note: %s is set in this environment; where it is set, Rebound uses it instead of the stored key.\n", res.Name)
	}
	if res.Config != "" {
		fmt.Fprintln(s.err, "A Rebound the editor is already running uses the new provider and model once restarted (its key from the next prompt).")
	}
	for _, v := range res.Overridden {
		fmt.Fprintf(s.err, "Note: %s is set in this environment; where it is set, it overrides what was written to %s.\n", v, res.Config)
	}
	return 0
}

func runLogout(ctx context.Context, args []string, s streams, e env) int {
	flags, code, ok := parseCredentialsFlags("logout", logoutUsage, args, s)
	if !ok {
		return code
	}
	res, err := config.Logout(flags, e.getenv, e.home)
	switch {
	case err != nil:
		fmt.Fprintf(s.err, "rebound logout: %v\n", err)
		return 1
	case res.Removed:
		fmt.Fprintf(s.out, "Removed the API key for %s from %s\n", res.Name, res.Path)
	default:
		fmt.Fprintf(s.out, "No API key for %s is stored in %s\n", res.Name, res.Path)
	}
	return 0
}
