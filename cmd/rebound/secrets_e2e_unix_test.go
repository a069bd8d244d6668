//go:build unix

package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// TestE2E_ToolsDoNotSeeTheAPIKey: a command the model runs (env) and a
// stdio MCP server see neither the variable holding the provider's API key
// nor the key under another name, nor the key `rebound login` stored; the
// rest of the environment, and the variables the editor gave the server,
// they do see.
func TestE2E_ToolsDoNotSeeTheAPIKey(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const envKey, storedKey = "sk-e2e-env-key-0123456789", "sk-e2e-stored-key-9876543210"
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{ToolCalls: []mockprovider.ToolCall{
			{ID: "c1", Name: "run_command", Arguments: `{"command":"env"}`},
			{ID: "c2", Name: "mcp__mock__env", Arguments: `{}`},
		}},
		{Text: "Nothing to see."},
	}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[agent]\ndefault_mode = \"full_access\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configHome := filepath.Join(dir, "xdg")
	if err := os.MkdirAll(filepath.Join(configHome, "rebound"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configHome, "rebound", "credentials"), []byte("OPENAI_API_KEY="+storedKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a guard against a hang, not a wait
	defer cancel()
	p := spawn(t, ctx, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY="+envKey, "REBOUND_STATE_DIR="+filepath.Join(dir, "state"),
		"REBOUND_MODEL=mock-model", "REBOUND_CONFIG="+cfg, "XDG_CONFIG_HOME="+configHome,
		"COPY_OF_KEY="+envKey, "COPY_OF_STORED="+storedKey, "AUTH_HEADER=Bearer "+envKey, "KEEP_ME=kept")

	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	p.until(t, 0)
	server := mcpServerJSON(t, "mock", filepath.Join(dir, "mock.pid"), "GIVEN_BY_EDITOR=given")
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"`+dir+`","mcpServers":[`+server+`]}}`)
	_, resp := p.until(t, 1)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", resp)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"show me"}]}}`)
	notes, resp := p.until(t, 2)
	if resp["result"] == nil {
		t.Fatalf("prompt: %v\nstderr:\n%s", resp, p.stderr)
	}
	reqs := mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests, want 2", len(reqs))
	}
	results := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	shown := mustMarshal(notes) // what the editor was shown
	for id, want := range map[string][]string{"c1": {"KEEP_ME=kept"}, "c2": {"KEEP_ME=kept", "GIVEN_BY_EDITOR=given"}} {
		out := results[id]
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("the output of %s lacks %s:\n%s", id, w, out)
			}
		}
		for _, secret := range []string{"OPENAI_API_KEY", envKey, storedKey, "COPY_OF_KEY", "AUTH_HEADER"} {
			if strings.Contains(out, secret) {
				t.Errorf("the output of %s holds %s:\n%s", id, secret, out)
			}
		}
	}
	for _, secret := range []string{envKey, storedKey} {
		if strings.Contains(shown, secret) {
			t.Errorf("the editor was shown %s", secret)
		}
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("agent exit: %v\nstderr:\n%s", err, p.stderr)
	}
}
