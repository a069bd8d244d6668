package config_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/config"
)

func TestLogin_FromPipe(t *testing.T) {
	home := t.TempDir()
	var prompt bytes.Buffer
	res, err := config.Login(t.Context(), config.Flags{}, env{}.get, home, strings.NewReader("  sk-piped-key\r\n"), &prompt)
	if err != nil {
		t.Fatalf("Login() = %v", err)
	}
	want := config.LoginResult{Path: filepath.Join(home, ".config", "rebound", "credentials"), Name: "OPENAI_API_KEY"}
	if res.Path != want.Path || res.Name != want.Name || res.Shadowed || res.Config != "" {
		t.Errorf("Login() = %+v, want %+v", res, want)
	}
	if prompt.Len() != 0 {
		t.Errorf("a pipe got a prompt: %q", prompt.String())
	}
	if got, _ := config.ReadAPIKey(res.Path, "OPENAI_API_KEY"); got != "sk-piped-key" {
		t.Errorf("stored key = %q, want sk-piped-key", got)
	}
}

// The variable the key is stored for is provider.api_key_env, from the
// config file --config names; one set in the environment is reported.
func TestLogin_ConfigAndShadowing(t *testing.T) {
	home := t.TempDir()
	cfgFile := writeFile(t, home, "deepseek.toml", "[provider]\napi_key_env = \"DEEPSEEK_API_KEY\"\n")
	res, err := config.Login(t.Context(), config.Flags{ConfigPath: &cfgFile}, env{"DEEPSEEK_API_KEY": "sk-env"}.get, home,
		strings.NewReader("sk-deepseek\n"), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("Login() = %v", err)
	}
	if res.Name != "DEEPSEEK_API_KEY" || !res.Shadowed {
		t.Errorf("Login() = %+v, want Name DEEPSEEK_API_KEY, Shadowed", res)
	}
	if got, _ := config.ReadAPIKey(res.Path, "DEEPSEEK_API_KEY"); got != "sk-deepseek" {
		t.Errorf("stored key = %q", got)
	}
}

func TestLogin_BadInput(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"empty", "", "no API key given"},
		{"blank line", "  \n", "no API key given"},
		{"two lines", "sk-secret-one\nsk-secret-two\n", "more than one line"},
		{"spaces", "sk secret\n", "without spaces"},
		{"too long", strings.Repeat("s", 10000), "longer than the 4096 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			_, err := config.Login(t.Context(), config.Flags{}, env{}.get, home, strings.NewReader(tt.input), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Login() = %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error quotes the input: %v", err)
			}
			if got, _ := config.ReadAPIKey(config.CredentialsPath(env{}.get, home), "OPENAI_API_KEY"); got != "" {
				t.Errorf("a key was stored: %q", got)
			}
		})
	}
}

// blockingReader never returns, like a terminal nobody types into, until
// ch is closed: then it is at its end. (It returned 0, nil after the close,
// and the login's reading goroutine, left blocked by the cancel, spun on it
// for the rest of the package's run: seconds of CPU under -race.)
type blockingReader struct{ ch chan struct{} }

func (r blockingReader) Read([]byte) (int, error) { <-r.ch; return 0, io.EOF }

func TestLogin_Cancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := blockingReader{make(chan struct{})}
	defer close(r.ch)
	if _, err := config.Login(ctx, config.Flags{}, env{}.get, t.TempDir(), r, &bytes.Buffer{}); err != context.Canceled {
		t.Errorf("Login() = %v, want context.Canceled", err)
	}
}

func TestLogin_NowhereToStore(t *testing.T) {
	// No home and no XDG_CONFIG_HOME; the state directory is given so the
	// settings themselves resolve.
	_, err := config.Login(t.Context(), config.Flags{}, env{"REBOUND_STATE_DIR": t.TempDir()}.get, "", strings.NewReader("sk-x\n"), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "XDG_CONFIG_HOME") {
		t.Errorf("Login() = %v, want an error naming XDG_CONFIG_HOME", err)
	}
}

func TestLogout(t *testing.T) {
	home := t.TempDir()
	if _, err := config.Login(t.Context(), config.Flags{}, env{}.get, home, strings.NewReader("sk-a\n"), &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	res, err := config.Logout(config.Flags{}, env{}.get, home)
	if err != nil || !res.Removed || res.Name != "OPENAI_API_KEY" {
		t.Fatalf("Logout() = %+v, %v; want the key removed", res, err)
	}
	if res, err := config.Logout(config.Flags{}, env{}.get, home); err != nil || res.Removed {
		t.Errorf("second Logout() = %+v, %v; want nothing removed", res, err)
	}
}
