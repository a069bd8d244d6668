package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// TestProviderHeaders_SentNeverLogged: provider.headers reach the provider
// on every request, and their values appear nowhere Rebound writes: not in
// stderr at debug level, not in a session log, not in what the editor is
// sent, whether the request succeeds or fails.
func TestProviderHeaders_SentNeverLogged(t *testing.T) {
	const secret = "gw-secret-7f3a9c21"
	state, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgPath, []byte("log_level = \"debug\"\n[provider]\nmodel = \"mock-model\"\n[provider.headers]\nX-Gateway-Key = \""+secret+"\"\nX-Tags = \"team=a\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		return map[string]string{"REBOUND_STATE_DIR": state, "OPENAI_API_KEY": "sk-test-key-123456", "OPENAI_BASE_URL": "http://127.0.0.1/v1", "REBOUND_CONFIG": cfgPath}[k]
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{Text: "Hello."},
		// A gateway that refuses repeats the key, in its body and a header.
		{Status: 400, Body: json.RawMessage(`{"error":{"message":"gateway key ` + secret + ` is not valid","type":"invalid_request_error"}}`), Headers: map[string]string{"X-Echo": secret}},
		// A 2xx stream whose in-stream error repeats it (retried: the next step answers).
		{Text: "Par", StreamError: json.RawMessage(`{"message":"gateway key ` + secret + ` expired mid-stream","type":"server_error"}`)},
		{Text: "Hello again."},
	}})

	p := serveInProcess(t, env{getenv: getenv, home: home, httpClient: mock})
	sid := p.newSession(cwd)
	for i := range 3 {
		p.prompt(2+i, sid, "hi")
	}
	p.end()

	reqs := mock.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("X-Gateway-Key") != secret || r.Header.Get("X-Tags") != "team=a" {
			t.Errorf("request %d lacks provider.headers: %v", r.Seq, r.Header)
		}
	}
	logs := p.logs()
	if !strings.Contains(logs, `"level":"debug"`) {
		t.Fatalf("no debug logging to check: %s", logs)
	}
	where := map[string]string{"stderr": logs, "the editor's stdout": p.shown.String()}
	filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			where[path] = string(b)
		}
		return nil
	})
	if len(where) < 3 {
		t.Fatalf("no session log written under %s", state)
	}
	for name, text := range where {
		if strings.Contains(text, secret) {
			t.Errorf("%s holds a provider.headers value:\n%s", name, text)
		}
	}
}
