package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/llm/mockprovider"
)

// rebound is one in-process run of the server for a test: requests in,
// answers (by id) out.
type rebound struct {
	in   *io.PipeWriter
	outR *io.PipeReader
	out  *bufio.Scanner
	done chan int
}

func startRebound(t *testing.T, getenv func(string) string, home string, mock *mockprovider.Mock) *rebound {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &rebound{in: inW, outR: outR, out: bufio.NewScanner(outR), done: make(chan int, 1)}
	r.out.Buffer(nil, 16<<20)
	go func() {
		r.done <- runEnv(t.Context(), nil, inR, outW, io.Discard, env{getenv: getenv, home: home, httpClient: mock})
		outW.Close()
	}()
	return r
}

// call sends a request and returns its answer, skipping notifications.
func (r *rebound) call(t *testing.T, id int, method string, params map[string]any) map[string]any {
	t.Helper()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := r.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	for r.out.Scan() {
		var m map[string]any
		if err := json.Unmarshal(r.out.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if got, ok := m["id"].(float64); ok && int(got) == id && m["method"] == nil {
			return m
		}
	}
	t.Fatalf("%s: no answer", method)
	return nil
}

func (r *rebound) stop(t *testing.T) {
	t.Helper()
	r.in.Close()
	go io.Copy(io.Discard, r.outR)
	if code := <-r.done; code != 0 {
		t.Errorf("rebound exited %d", code)
	}
}

// Every session method may come first from a client that respawned Rebound
// after a crash (no initialize, no session/load). Each is served; one that
// names a session with a log opens it, and the next prompt goes on with its
// history. One that names a session with no log is -32002.
func TestServe_SessionMethodFirstAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server several times")
	}
	const unknown = "sess_0000000000000000000000000000dead"
	cwd := t.TempDir()
	calls := map[string]func(id string) map[string]any{
		"session/prompt": func(id string) map[string]any {
			return map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": "and then?"}}}
		},
		"session/set_mode": func(id string) map[string]any { return map[string]any{"sessionId": id, "modeId": "read_only"} },
		"session/set_config_option": func(id string) map[string]any {
			return map[string]any{"sessionId": id, "configId": "mode", "value": "read_only"}
		},
		"session/load": func(id string) map[string]any {
			return map[string]any{"sessionId": id, "cwd": cwd, "mcpServers": []any{}}
		},
		"session/resume": func(id string) map[string]any { return map[string]any{"sessionId": id, "cwd": cwd} },
		"session/close":  func(id string) map[string]any { return map[string]any{"sessionId": id} },
		"session/delete": func(id string) map[string]any { return map[string]any{"sessionId": id} },
		"session/list":   func(string) map[string]any { return map[string]any{} },
		"session/new":    func(string) map[string]any { return map[string]any{"cwd": cwd, "mcpServers": []any{}} },
	}
	for method, params := range calls {
		t.Run(method, func(t *testing.T) {
			state, home := t.TempDir(), t.TempDir()
			getenv := func(k string) string {
				switch k {
				case "REBOUND_STATE_DIR":
					return state
				case "OPENAI_API_KEY":
					return "sk-test-key"
				case "OPENAI_BASE_URL":
					return "http://127.0.0.1/v1"
				}
				return ""
			}
			mock := mockprovider.New(&mockprovider.Script{Fallback: &mockprovider.Step{Text: "Noted."}})
			first := startRebound(t, getenv, home, mock)
			first.call(t, 0, "initialize", map[string]any{"protocolVersion": 1})
			res, _ := first.call(t, 1, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})["result"].(map[string]any)
			id, _ := res["sessionId"].(string)
			if e := first.call(t, 2, "session/prompt", calls["session/prompt"](id)); e["error"] != nil {
				t.Fatalf("first prompt: %v", e["error"])
			}
			first.stop(t)

			again := startRebound(t, getenv, home, mock)
			defer again.stop(t)
			if m := again.call(t, 3, method, params(id)); m["error"] != nil {
				t.Fatalf("%s first after a restart answered %v", method, m["error"])
			}
			if method != "session/new" && method != "session/list" {
				e, _ := again.call(t, 4, method, params(unknown))["error"].(map[string]any)
				if method != "session/close" && (e == nil || e["code"] != float64(-32002)) {
					t.Errorf("%s for a session with no log answered %v, want -32002", method, e)
				}
			}
			if method == "session/delete" {
				return
			}
			if m := again.call(t, 5, "session/prompt", calls["session/prompt"](id)); m["error"] != nil {
				t.Fatalf("the prompt after %s answered %v", method, m["error"])
			}
			reqs := mock.Requests()
			last := fmt.Sprint(reqs[len(reqs)-1])
			if strings.Count(last, "and then?") < 2 || !strings.Contains(last, "Noted.") {
				t.Errorf("the prompt after %s went without the session's history: %s", method, last)
			}
		})
	}
}
