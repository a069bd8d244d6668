package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	var mu sync.Mutex
	done := make(chan int, 1)
	go func() {
		done <- runEnv(t.Context(), nil, inR, outW, lockedWriter{&mu, &stderr}, env{getenv: getenv, home: home, httpClient: mock})
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
		t.Fatalf("%s: no answer", method)
		return nil
	}
	call(0, "initialize", map[string]any{"protocolVersion": 1})
	res, _ := call(1, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	for i := range 3 {
		call(2+i, "session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": "hi"}}})
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-done

	reqs := mock.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("X-Gateway-Key") != secret || r.Header.Get("X-Tags") != "team=a" {
			t.Errorf("request %d lacks provider.headers: %v", r.Seq, r.Header)
		}
	}
	mu.Lock()
	logs := stderr.String()
	mu.Unlock()
	if !strings.Contains(logs, `"level":"debug"`) {
		t.Fatalf("no debug logging to check: %s", logs)
	}
	where := map[string]string{"stderr": logs, "the editor's stdout": shown.String()}
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
