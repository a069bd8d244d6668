package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

func runCLI(t *testing.T, e env, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb strings.Builder
	code = runEnv(t.Context(), args, strings.NewReader(stdin), &out, &errb, e)
	return code, out.String(), errb.String()
}

func fakeEnv(home string, vars map[string]string) env {
	return env{home: home, getenv: func(k string) string { return vars[k] }}
}

// `rebound login` with the key piped in stores it 0600 under the config
// directory and prints where; serve then uses it.
func TestLogin_PipedKey(t *testing.T) {
	home := t.TempDir()
	e := fakeEnv(home, nil)
	code, stdout, stderr := runCLI(t, e, "sk-piped-secret\n", "login")
	if code != 0 {
		t.Fatalf("rebound login exited %d: %s", code, stderr)
	}
	path := filepath.Join(home, ".config", "rebound", "credentials")
	if want := "Stored the API key for OPENAI_API_KEY in " + path + "\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
	if strings.Contains(stdout+stderr, "sk-piped-secret") {
		t.Error("the key was printed")
	}
	if info, err := os.Stat(path); err != nil {
		t.Fatal(err)
	} else if runtime.GOOS != "windows" && info.Mode().Perm() != 0o600 {
		t.Errorf("credentials mode = %04o, want 0600", info.Mode().Perm())
	}
	cfg, err := config.Load(config.Flags{}, e.getenv, home)
	if err != nil || cfg.Provider.APIKey != "sk-piped-secret" {
		t.Errorf("Load() after login: key %q, %v; want the stored key", cfg.Provider.APIKey, err)
	}

	code, stdout, _ = runCLI(t, e, "", "logout")
	if want := "Removed the API key for OPENAI_API_KEY from " + path + "\n"; code != 0 || stdout != want {
		t.Errorf("rebound logout: %d, %q; want 0, %q", code, stdout, want)
	}
	code, stdout, _ = runCLI(t, e, "", "logout")
	if want := "No API key for OPENAI_API_KEY is stored in " + path + "\n"; code != 0 || stdout != want {
		t.Errorf("rebound logout again: %d, %q; want 0, %q", code, stdout, want)
	}
}

func TestLogin_Errors(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name       string
		vars       map[string]string
		stdin      string
		args       []string
		wantCode   int
		wantStderr string
	}{
		{"no key", nil, "\n", []string{"login"}, 1, "rebound login: no API key given\n"},
		{"two lines", nil, "sk-a\nsk-b\n", []string{"login"}, 1, "more than one line"},
		{"argument", nil, "", []string{"login", "sk-on-the-command-line"}, 2, `unexpected argument "sk-on-the-command-line"`},
		{"bad config", map[string]string{"REBOUND_CONFIG": filepath.Join(home, "missing.toml")}, "sk-a\n", []string{"login"}, 1, "missing.toml"},
		// Its model list and its key would go past the company's proxy.
		{"bad proxy", map[string]string{"HTTPS_PROXY": "http://user:s3cret@proxy%zz:3128"}, "sk-a\n", []string{"login", "--provider", "openai", "--model", "gpt-4o"}, 1, "HTTPS_PROXY"},
		{"help", nil, "", []string{"login", "--help"}, 0, "Usage: rebound login"},
		{"logout help", nil, "", []string{"logout", "-h"}, 0, "Usage: rebound logout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, fakeEnv(home, tt.vars), tt.stdin, tt.args...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.wantCode, tt.wantStderr)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(home, ".config", "rebound", "credentials")); err == nil {
		t.Error("a failed login stored something")
	}
}

// A variable set in the environment wins over the stored key; login says so.
func TestLogin_EnvironmentTakesPrecedence(t *testing.T) {
	code, _, stderr := runCLI(t, fakeEnv(t.TempDir(), map[string]string{"OPENAI_API_KEY": "sk-env"}), "sk-stored\n", "login")
	if code != 0 || !strings.Contains(stderr, "OPENAI_API_KEY is set in this environment") {
		t.Errorf("exit %d, stderr %q; want 0 and a note that OPENAI_API_KEY takes precedence", code, stderr)
	}
}

// `rebound login --provider … --model …` from a script: the settings go to
// the config file, the key (none for Ollama) to the credentials, and what
// overrides them in the environment is noted.
func TestLogin_ScriptedProvider(t *testing.T) {
	home := t.TempDir()
	e := fakeEnv(home, map[string]string{"REBOUND_MODEL": "env-model", "REBOUND_STATE_DIR": t.TempDir()})
	code, stdout, stderr := runCLI(t, e, "", "login", "--provider", "ollama", "--model", "qwen3:8b")
	if code != 0 {
		t.Fatalf("rebound login exited %d: %s", code, stderr)
	}
	cfgPath := filepath.Join(home, ".config", "rebound", "config.toml")
	if !strings.Contains(stdout, `provider.base_url = "http://localhost:11434/v1", provider.model = "qwen3:8b" and provider.api_key_env = "OLLAMA_API_KEY" in `+cfgPath) {
		t.Errorf("stdout = %q", stdout)
	}
	if !strings.Contains(stderr, "REBOUND_MODEL is set in this environment") || !strings.Contains(stderr, "once restarted") {
		t.Errorf("stderr = %q, want notes on REBOUND_MODEL and the restart", stderr)
	}
	cfg, err := config.Load(config.Flags{}, fakeEnv(home, map[string]string{"REBOUND_STATE_DIR": t.TempDir()}).getenv, home)
	if err != nil || cfg.Provider.BaseURL != "http://localhost:11434/v1" || cfg.Provider.Model != "qwen3:8b" || cfg.Provider.APIKey != "ollama" {
		t.Errorf("Load() after login = %v, %v", cfg.Provider, err)
	}
	code, _, stderr = runCLI(t, e, "", "login", "--provider", "nope", "--model", "m")
	if code != 1 || !strings.Contains(stderr, "not one of openai") {
		t.Errorf("unknown provider: %d, %q", code, stderr)
	}
}
