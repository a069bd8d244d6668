package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/config"
)

// The ACP logout of the real binary does what `rebound logout` does: the
// key `rebound login` stored is gone from the credentials file, the reply
// says so, and the next prompt needs signing in again.
func TestLogout_RemovesTheStoredKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cfgHome := t.TempDir()
	path := config.CredentialsPath(func(k string) string {
		if k == "XDG_CONFIG_HOME" {
			return cfgHome
		}
		return ""
	}, "")
	if err := config.StoreAPIKey(path, "OPENAI_API_KEY", "sk-logout-test-0123456789"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()
	p := spawn(t, ctx, "XDG_CONFIG_HOME="+cfgHome, "REBOUND_STATE_DIR="+t.TempDir())

	p.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	_, resp := p.until(t, 0)
	caps, _ := json.Marshal(resp["result"].(map[string]any)["agentCapabilities"].(map[string]any)["auth"])
	if string(caps) != `{"logout":{}}` {
		t.Errorf("agentCapabilities.auth = %s, want {\"logout\":{}}", caps)
	}

	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"logout","params":{}}`)
	_, resp = p.until(t, 1)
	res, _ := resp["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)["rebound/logout"].(map[string]any)
	msg, _ := meta["message"].(string)
	if meta["removed"] != true || !strings.Contains(msg, "Removed the API key for OPENAI_API_KEY from "+path) {
		t.Errorf("logout answered %v", resp)
	}
	if key, err := config.ReadAPIKey(path, "OPENAI_API_KEY"); key != "" || err != nil {
		t.Errorf("after logout the credentials file holds %q (%v)", key, err)
	}

	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	_, resp = p.until(t, 2)
	sid, _ := resp["result"].(map[string]any)["sessionId"].(string)
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi"}]}}`)
	_, resp = p.until(t, 3)
	if e, _ := resp["error"].(map[string]any); e == nil || e["code"] != -32000.0 {
		t.Errorf("a prompt after logout answered %v, want auth required", resp)
	}
	p.stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("rebound exited: %v\n%s", err, p.stderr)
	}
}
