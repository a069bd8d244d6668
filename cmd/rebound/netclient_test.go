package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// promptOnce runs Rebound with getenv, opens a session and sends one
// prompt; it returns what the editor was sent.
func promptOnce(t *testing.T, getenv func(string) string, dial *testkit.LocalNet) string {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	var mu sync.Mutex
	done := make(chan int, 1)
	go func() {
		done <- runEnv(t.Context(), nil, inR, outW, lockedWriter{&mu, &stderr}, env{getenv: getenv, home: t.TempDir(), dial: dial.Dial})
		outW.Close()
	}()
	var shown bytes.Buffer
	out := bufio.NewScanner(io.TeeReader(outR, &shown))
	out.Buffer(nil, 16<<20)
	call := func(id int, method string, params map[string]any) map[string]any {
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		inW.Write(append(line, '\n'))
		for out.Scan() {
			var m map[string]any
			json.Unmarshal(out.Bytes(), &m)
			if got, ok := m["id"].(float64); ok && int(got) == id && m["method"] == nil {
				return m
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s: no answer; stderr:\n%s", method, stderr.String())
		return nil
	}
	call(0, "initialize", map[string]any{"protocolVersion": 1})
	res, _ := call(1, "session/new", map[string]any{"cwd": t.TempDir(), "mcpServers": []any{}})["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	call(2, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-done
	return shown.String()
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
