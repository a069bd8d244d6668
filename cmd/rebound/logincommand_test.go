package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/config"
)

// The command in the terminal method's _meta["terminal-auth"], run in a
// terminal that has none of the agent's environment (an editor's terminal
// has its own), stores the key where the Rebound that offered it looks:
// under the variable its config file names, in the credentials file under
// its XDG_CONFIG_HOME, whichever way the file was chosen.
func TestLoginCommand_StoresTheKeyWhereServeLooks(t *testing.T) {
	const exe = "/opt/rebound/bin/rebound"
	for _, how := range []string{"--config", config.EnvConfig, "default file"} {
		t.Run(how, func(t *testing.T) {
			home, xdg := t.TempDir(), t.TempDir()
			cfgPath := filepath.Join(t.TempDir(), "rebound.toml")
			vars := map[string]string{"XDG_CONFIG_HOME": xdg}
			var flags config.Flags
			switch how {
			case "--config":
				flags.ConfigPath = &cfgPath
			case config.EnvConfig:
				vars[config.EnvConfig] = cfgPath
			default:
				cfgPath = filepath.Join(xdg, "rebound", "config.toml")
			}
			if err := os.MkdirAll(filepath.Dir(cfgPath), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfgPath, []byte("[provider]\napi_key_env = \"MY_PROVIDER_KEY\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			agentEnv := fakeEnv(home, vars)
			agentEnv.executable = func() (string, error) { return exe, nil }
			cfg, err := config.Load(flags, agentEnv.getenv, home)
			if err != nil {
				t.Fatal(err)
			}
			meta := loginCommand(zerolog.Nop(), agentEnv, cfg.Source)
			if meta.Command != exe || !slices.Equal(meta.Args, []string{"login"}) || meta.Label == "" {
				t.Fatalf("_meta[terminal-auth] = %+v, want %s login with a label", meta, exe)
			}
			terminal := fakeEnv(home, meta.Env)
			if code, _, stderr := runCLI(t, terminal, "sk-from-the-terminal\n", meta.Args...); code != 0 {
				t.Fatalf("%s %v exited %d: %s", meta.Command, meta.Args, code, stderr)
			}
			if key, err := config.APIKey(cfg.Provider.APIKeyEnv, agentEnv.getenv, home); key != "sk-from-the-terminal" {
				t.Errorf("serve finds key %q (%v) for %s, want the one the terminal stored", key, err, cfg.Provider.APIKeyEnv)
			}
		})
	}
}

// Without a binary path (os.Executable failed, or gave a relative one)
// there is no command to offer.
func TestLoginCommand_UnknownBinary(t *testing.T) {
	for name, exe := range map[string]func() (string, error){
		"none":     nil,
		"fails":    func() (string, error) { return "", errors.New("no /proc") },
		"relative": func() (string, error) { return "rebound", nil },
	} {
		e := fakeEnv(t.TempDir(), nil)
		e.executable = exe
		if meta := loginCommand(zerolog.Nop(), e, ""); meta.Command != "" {
			t.Errorf("%s: _meta[terminal-auth] = %+v, want none", name, meta)
		}
	}
}
