package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/rebound-agent/rebound/config"
)

func init() {
	register(command{name: "login", summary: "store the model provider's API key for Rebound to use (asks for it)", run: runLogin})
	register(command{name: "logout", summary: "remove the API key 'rebound login' stored", run: runLogout})
}

const loginUsage = `Usage: rebound login [--config FILE]

Asks for your model provider's API key and stores it where Rebound looks for it
when the environment has none: in $XDG_CONFIG_HOME/rebound/credentials, else
~/.config/rebound/credentials, a file only you can read (mode 0600), under the
name of the variable provider.api_key_env names (default OPENAI_API_KEY). A
variable set in the environment still takes precedence.

On a terminal the key is not shown as you type. Otherwise one line is read from
stdin, so a script can pipe it in: rebound login < key.txt

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

// parseCredentialsFlags parses the one flag login and logout take: the
// config file, which may name another variable (provider.api_key_env).
func parseCredentialsFlags(name, usage string, args []string, s streams) (config.Flags, int, bool) {
	fs := flag.NewFlagSet("rebound "+name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
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
	flags, code, ok := parseCredentialsFlags("login", loginUsage, args, s)
	if !ok {
		return code
	}
	res, err := config.Login(ctx, flags, e.getenv, e.home, s.in, s.err)
	if err != nil {
		fmt.Fprintf(s.err, "rebound login: %v\n", err)
		return 1
	}
	fmt.Fprintf(s.out, "Stored the API key for %s in %s\n", res.Name, res.Path)
	if res.Shadowed {
		fmt.Fprintf(s.err, "Note: %s is set in this environment; where it is set, Rebound uses it instead of the stored key.\n", res.Name)
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
