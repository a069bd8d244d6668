package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every kind of configuration error reaches the editor: initialize is
// answered, and each method after it fails with the text printed on
// stderr, which names what is wrong. The exit code still says it failed.
func TestServe_ConfigErrorReachesTheEditor(t *testing.T) {
	cases := []struct {
		name string
		file string // config.toml's content; "" for none
		make func(t *testing.T, path string)
		want string // in the error's text
	}{
		{name: "unknown key", file: "[provider]\nmodle = \"x\"\n", want: `provider.modle: unknown key (did you mean "model"?)`},
		{name: "bad value", file: "[agent]\nstreaming = \"fast\"\n", want: `agent.streaming: must be live or held, got "fast"`},
		{name: "bad TOML syntax", file: "[provider\n", want: "config.toml:"},
		{name: "missing file", want: "no such file or directory"},
		{name: "unreadable file", make: func(t *testing.T, path string) {
			// A directory where the file should be: unreadable as a file
			// even for root, who reads a mode-000 file.
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, want: "config.toml"},
		{name: "bad value type", file: "[provider]\nmax_tokens = \"many\"\n", want: "max_tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			switch {
			case c.make != nil:
				c.make(t, path)
			case c.file != "":
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string {
				switch k {
				case "REBOUND_CONFIG":
					return path
				case "REBOUND_STATE_DIR":
					return filepath.Join(t.TempDir(), "state")
				}
				return ""
			}
			answers, code, stderr := serveLines(t, nil, getenv, []string{
				`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
				`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/home/user/project","mcpServers":[]}}`,
				`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"sess_0000000000000000000000000000beef","cwd":"/home/user/project","mcpServers":[]}}`,
				`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess_0000000000000000000000000000beef","prompt":[{"type":"text","text":"hi"}]}}`,
				`{"jsonrpc":"2.0","id":4,"method":"session/list","params":{}}`,
				`{"jsonrpc":"2.0","id":5,"method":"session/set_mode","params":{"sessionId":"sess_0000000000000000000000000000beef","modeId":"read-only"}}`,
			}, 6)
			if code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			first, _, _ := strings.Cut(stderr, "\n")
			text, ok := strings.CutPrefix(first, "rebound: ")
			if !ok || !strings.Contains(text, c.want) {
				t.Fatalf("stderr's first line = %q, want the error naming %q", first, c.want)
			}
			init, _ := answers[0]["result"].(map[string]any)
			if init == nil {
				t.Fatalf("initialize was not answered with a result: %v", answers[0])
			}
			meta, _ := init["agentCapabilities"].(map[string]any)["_meta"].(map[string]any)
			if meta[configErrorMetaKey] != text {
				t.Errorf("initialize's _meta[%s] = %v, want %q", configErrorMetaKey, meta[configErrorMetaKey], text)
			}
			for id := 1.0; id <= 5; id++ {
				e, _ := answers[id]["error"].(map[string]any)
				// Not -32603: codecompanion.nvim shows nothing of that code.
				if e == nil || e["message"] != text || e["code"] != float64(codeConfigError) {
					t.Errorf("request %v answered %v, want the error %q", id, answers[id], text)
				}
			}
		})
	}
}
