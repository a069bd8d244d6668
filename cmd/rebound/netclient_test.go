package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// promptOnce runs Rebound with getenv, opens a session and sends one
// prompt; it returns what the editor was sent.
func promptOnce(t *testing.T, getenv func(string) string, dial *testkit.LocalNet) string {
	t.Helper()
	p := serveInProcess(t, env{getenv: getenv, home: t.TempDir(), dial: dial.Dial})
	p.prompt(2, p.newSession(t.TempDir()), "hi")
	p.end()
	return p.shown.String()
}

// The provider's requests go through HTTPS_PROXY unless NO_PROXY names the
// host, and reach a server with its own CA only when REBOUND_CA_FILE or
// provider.ca_file gives it; otherwise the editor is told which setting
// would.
func TestProviderHTTP_ProxyAndCA(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.toml")
	cfgText := "[provider]\nmodel = \"mock-model\"\nbase_url = \"https://example.com/v1\"\n[recovery]\nmax_retries = 0\n"
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		vars      map[string]string
		withCA    bool
		viaProxy  bool
		wantShown string
	}{
		{"through the proxy", map[string]string{"HTTPS_PROXY": "proxy"}, true, true, "Hello from example.com"},
		{"NO_PROXY", map[string]string{"HTTPS_PROXY": "proxy", "NO_PROXY": "example.com"}, true, false, "Hello from example.com"},
		{"no CA file", map[string]string{"HTTPS_PROXY": "proxy"}, false, true, "provider.ca_file or REBOUND_CA_FILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "Hello from example.com"}}})
			srv, ca := testkit.TLSServer(t, mock)
			names := map[string]string{"example.com:443": srv.Listener.Addr().String()}
			proxy := testkit.NewProxy(t, &testkit.LocalNet{Names: names})
			vars := map[string]string{"REBOUND_STATE_DIR": t.TempDir(), "OPENAI_API_KEY": "sk-test-key-123456", "REBOUND_CONFIG": cfgPath}
			for k, v := range tt.vars {
				if v == "proxy" {
					v = proxy.URL
				}
				vars[k] = v
			}
			if tt.withCA {
				vars["REBOUND_CA_FILE"] = ca
			}
			shown := promptOnce(t, func(k string) string { return vars[k] }, &testkit.LocalNet{Names: names})
			if !strings.Contains(shown, tt.wantShown) {
				t.Errorf("the editor was not shown %q:\n%s", tt.wantShown, shown)
			}
			// The model list is asked for too: every request is a CONNECT
			// to the provider.
			got := proxy.Requests()
			viaProxy := len(got) > 0 && !slices.ContainsFunc(got, func(r string) bool { return r != "CONNECT example.com:443" })
			if viaProxy != tt.viaProxy || len(got) == 0 && tt.viaProxy {
				t.Errorf("the proxy was asked for %q; want only CONNECT example.com:443: %v", got, tt.viaProxy)
			}
		})
	}
}
