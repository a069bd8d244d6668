package config_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/rebound-agent/rebound/config"
)

// modelsServer is a fake provider's GET /models; every request, to
// whatever base URL, is sent to it (a preset's real host is never
// reached). It records the paths and keys it was asked with.
type modelsServer struct {
	srv    *httptest.Server
	status int
	ids    []string
	mu     sync.Mutex
	asked  []string
}

func newModelsServer(t *testing.T, status int, ids ...string) *modelsServer {
	m := &modelsServer{status: status, ids: ids}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		m.asked = append(m.asked, r.Method+" "+r.Host+r.URL.Path+" "+r.Header.Get("Authorization"))
		m.mu.Unlock()
		if m.status != 200 {
			http.Error(w, `{"error":{"message":"down for maintenance","type":"server_error"}}`, m.status)
			return
		}
		var data []string
		for _, id := range m.ids {
			data = append(data, fmt.Sprintf(`{"id":%q,"object":"model"}`, id))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// Do sends req to the fake server, keeping its Host.
func (m *modelsServer) Do(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Host = req.URL.Host
	req.URL.Scheme, req.URL.Host = "http", strings.TrimPrefix(m.srv.URL, "http://")
	return http.DefaultClient.Do(req)
}

func (m *modelsServer) requests() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.asked...)
}

func readProvider(t *testing.T, path string) map[string]any {
	t.Helper()
	var m map[string]any
	if _, err := toml.DecodeFile(path, &m); err != nil {
		t.Fatal(err)
	}
	p, _ := m["provider"].(map[string]any)
	return p
}

// For scripts: --provider and --model choose, the key is read from stdin
// (none for Ollama), the config file gets the provider's settings and
// keeps the rest, and Load then finds all of it.
func TestLoginWith_Scripted(t *testing.T) {
	for _, tt := range []struct {
		name    string
		choice  config.LoginChoice
		stdin   string
		base    string
		keyEnv  string
		key     string
		inFront string // what the config file held before
	}{
		{"groq", config.LoginChoice{Provider: "groq", Model: "llama-3.3-70b"}, "gsk-secret\n", "https://api.groq.com/openai/v1", "GROQ_API_KEY", "gsk-secret", ""},
		{"ollama needs no key", config.LoginChoice{Provider: "ollama", Model: "qwen3:8b"}, "", "http://localhost:11434/v1", "OLLAMA_API_KEY", "ollama", "# mine\nlog_level = \"debug\" # keep\n\n[provider]\nmax_tokens = 4096\n"},
		{"custom URL", config.LoginChoice{BaseURL: "https://llm.example.com/v1", Model: "m1"}, "sk-c\n", "https://llm.example.com/v1", "OPENAI_API_KEY", "sk-c", "[provider]\nmodel = \"old\" # was\n"},
		{"preset elsewhere", config.LoginChoice{Provider: "lmstudio", BaseURL: "http://gpu-box:1234/v1", Model: "m"}, "", "http://gpu-box:1234/v1", "LM_STUDIO_API_KEY", "lm-studio", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			cfgPath := filepath.Join(home, ".config", "rebound", "config.toml")
			if tt.inFront != "" {
				writeFile(t, home, ".config/rebound/config.toml", tt.inFront)
			}
			getenv := env{"REBOUND_STATE_DIR": t.TempDir()}.get
			res, err := config.LoginWith(t.Context(), config.Flags{}, tt.choice, getenv, home, strings.NewReader(tt.stdin), &bytes.Buffer{})
			if err != nil {
				t.Fatalf("LoginWith() = %v", err)
			}
			if res.Config != cfgPath || res.Name != tt.keyEnv || res.BaseURL != tt.base || res.Model != tt.choice.Model {
				t.Errorf("LoginWith() = %+v", res)
			}
			cfg, err := config.Load(config.Flags{}, getenv, home)
			if err != nil {
				t.Fatalf("Load() after login = %v", err)
			}
			if p := cfg.Provider; p.BaseURL != tt.base || p.Model != tt.choice.Model || p.APIKeyEnv != tt.keyEnv || p.APIKey != tt.key {
				t.Errorf("Load() after login: base %q model %q key env %q key set %v", p.BaseURL, p.Model, p.APIKeyEnv, p.APIKey == tt.key)
			}
			data, _ := os.ReadFile(cfgPath)
			for _, line := range strings.Split(strings.TrimSpace(tt.inFront), "\n") {
				if line != "" && !strings.HasPrefix(line, "model =") && !strings.Contains(string(data), line) {
					t.Errorf("line %q of the config file was lost:\n%s", line, data)
				}
			}
			if strings.Contains(tt.inFront, "# was") && !strings.Contains(string(data), "model = \"m1\" # was") {
				t.Errorf("the replaced key lost its comment:\n%s", data)
			}
		})
	}
}

func TestLoginWith_ScriptedErrors(t *testing.T) {
	for _, tt := range []struct {
		name   string
		choice config.LoginChoice
		want   string
	}{
		{"unknown provider", config.LoginChoice{Provider: "anthropic", Model: "m"}, `"anthropic" is not one of openai, deepseek`},
		{"no model", config.LoginChoice{Provider: "groq"}, "--model is needed"},
		{"custom without URL", config.LoginChoice{Provider: "custom", Model: "m"}, "needs --base-url"},
		{"bad URL", config.LoginChoice{BaseURL: "https://x/v1/chat/completions", Model: "m"}, "not the endpoint itself"},
		{"bad model", config.LoginChoice{Provider: "ollama", Model: "two words"}, "not a model name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			_, err := config.LoginWith(t.Context(), config.Flags{}, tt.choice, env{"REBOUND_STATE_DIR": t.TempDir()}.get, home, strings.NewReader("sk-x\n"), &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("LoginWith() = %v, want an error containing %q", err, tt.want)
			}
			if _, err := os.Stat(filepath.Join(home, ".config", "rebound")); err == nil {
				t.Error("something was written")
			}
		})
	}
}

// The editor's sign-in stores what `rebound login` stores for the same
// answers: the same config file and the same credentials, byte for byte.
func TestSaveProvider_SameAsLogin(t *testing.T) {
	for _, tt := range []struct {
		choice config.ProviderChoice
		stdin  string
	}{
		{config.ProviderChoice{Provider: "deepseek", Key: "sk-ds", Model: "deepseek-chat"}, "sk-ds\n"},
		{config.ProviderChoice{Provider: "ollama", Key: "ignored", Model: "qwen3:8b"}, ""},
		{config.ProviderChoice{Provider: "custom", BaseURL: "https://llm.example.com/v1", Key: "sk-c", Model: "m1"}, "sk-c\n"},
	} {
		t.Run(tt.choice.Provider, func(t *testing.T) {
			const inFront = "# mine\n[provider]\nmodel = \"old\" # was\nmax_tokens = 4096\n"
			files := func(home string) string {
				c, _ := os.ReadFile(filepath.Join(home, ".config", "rebound", "config.toml"))
				k, _ := os.ReadFile(filepath.Join(home, ".config", "rebound", "credentials"))
				return string(c) + "\n--\n" + string(k)
			}
			login, editor := t.TempDir(), t.TempDir()
			writeFile(t, login, ".config/rebound/config.toml", inFront)
			writeFile(t, editor, ".config/rebound/config.toml", inFront)
			getenv := env{"REBOUND_STATE_DIR": t.TempDir()}.get
			want, err := config.LoginWith(t.Context(), config.Flags{}, config.LoginChoice{Provider: tt.choice.Provider, BaseURL: tt.choice.BaseURL, Model: tt.choice.Model},
				getenv, login, strings.NewReader(tt.stdin), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := config.SaveProvider(config.Flags{}, getenv, editor, tt.choice)
			if err != nil {
				t.Fatalf("SaveProvider() = %v", err)
			}
			if got.Name != want.Name || got.BaseURL != want.BaseURL || got.Model != want.Model {
				t.Errorf("SaveProvider() = %+v, login %+v", got, want)
			}
			if g, w := files(editor), strings.ReplaceAll(files(login), login, editor); g != w {
				t.Errorf("stored:\n%s\nrebound login stores:\n%s", g, w)
			}
		})
	}
}

// What the editor sends is checked as the terminal's answers are; a
// refused choice writes nothing, and no error repeats the key.
func TestSaveProvider_Refused(t *testing.T) {
	const key = "sk-secret-never-shown"
	for _, tt := range []struct {
		name   string
		choice config.ProviderChoice
		want   string
	}{
		{"unknown provider", config.ProviderChoice{Provider: "anthropic", Key: key, Model: "m"}, `"anthropic" is not one of openai`},
		{"custom without URL", config.ProviderChoice{Provider: "custom", Key: key, Model: "m"}, "needs its base URL"},
		{"not http", config.ProviderChoice{Provider: "custom", BaseURL: "file:///etc/passwd", Key: key, Model: "m"}, "absolute http or https URL"},
		{"credentials in the URL", config.ProviderChoice{Provider: "custom", BaseURL: "https://u:" + key + "@x/v1/chat/completions", Key: key, Model: "m"}, "not the endpoint itself"},
		{"no key", config.ProviderChoice{Provider: "openai", Model: "m"}, "needs an API key"},
		{"key of two lines", config.ProviderChoice{Provider: "openai", Key: key + "\nrm -rf", Model: "m"}, "one line of text"},
		{"key too long", config.ProviderChoice{Provider: "openai", Key: strings.Repeat("k", config.MaxAPIKeyBytes+1), Model: "m"}, "longer than"},
		{"model with a space", config.ProviderChoice{Provider: "openai", Key: key, Model: "gpt 4"}, "not a model name"},
		{"model with a newline", config.ProviderChoice{Provider: "openai", Key: key, Model: "m\n[provider]"}, "not a model name"},
		{"no model", config.ProviderChoice{Provider: "openai", Key: key}, "not a model name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			_, err := config.SaveProvider(config.Flags{}, env{"REBOUND_STATE_DIR": t.TempDir()}.get, home, tt.choice)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("SaveProvider() = %v, want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the error repeats the key: %v", err)
			}
			if _, err := os.Stat(filepath.Join(home, ".config", "rebound")); err == nil {
				t.Error("something was written")
			}
		})
	}
}
