package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// TestSharedLimit_EndToEnd is issue 33 end to end, with the real registry
// (package ratelimit, no scripted gate) and the mock provider's bucket of
// 2 requests per 10 s, on synctest's clock: another client of the
// provider has used up the window; session A's request is refused with a
// 429 and a reset; session B's prompt, sent after, waits on the shared
// hold (recorded as llm/retry policy "shared", by another chat, shown as a
// card) instead of being refused too; both prompts are answered, and no
// request of Rebound's reaches the provider between the 429 and the
// reset. Then the same with A and B in two Rebound processes (two runs
// with one state directory, each with its own registry): B's hold is by
// another Rebound process.
func TestSharedLimit_EndToEnd(t *testing.T) {
	for _, c := range []struct{ name, by string }{
		{"sessions", recovery.HoldByOtherChat},
		{"processes", recovery.HoldByOtherProcess},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { sharedLimitEndToEnd(t, c.name == "processes", c.by) })
		})
	}
}

// e2eAgent is one in-process Rebound whose stdout is collected.
type e2eAgent struct {
	in   *io.PipeWriter
	done chan int
	mu   sync.Mutex
	msgs []map[string]any
	got  chan map[string]any
	// responses read while awaiting another, by id
	responses map[int]map[string]any
}

func startE2EAgent(t *testing.T, e env, stderr io.Writer) *e2eAgent {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &e2eAgent{in: inW, done: make(chan int, 1), got: make(chan map[string]any, 1024), responses: map[int]map[string]any{}}
	go func() {
		a.done <- runEnv(t.Context(), nil, inR, outW, stderr, e)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout line is not JSON: %q", sc.Text())
				continue
			}
			a.mu.Lock()
			a.msgs = append(a.msgs, m)
			a.mu.Unlock()
			a.got <- m
		}
		close(a.got)
	}()
	return a
}

func (a *e2eAgent) send(t *testing.T, id int, method string, params any) {
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := a.in.Write(append(line, '\n')); err != nil {
		t.Fatalf("send %s: %v", method, err)
	}
}

// await returns the response to id, reading what comes before it (and
// keeping the responses to others).
func (a *e2eAgent) await(t *testing.T, id int) map[string]any {
	if m, ok := a.responses[id]; ok {
		return m
	}
	for m := range a.got {
		if got, ok := m["id"].(float64); ok && m["method"] == nil {
			if int(got) == id {
				return m
			}
			a.responses[int(got)] = m
		}
	}
	t.Fatalf("no response to %d", id)
	return nil
}

func (a *e2eAgent) newSession(t *testing.T, id int, cwd string) string {
	a.send(t, id, "session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	res, _ := a.await(t, id)["result"].(map[string]any)
	sid, _ := res["sessionId"].(string)
	if sid == "" {
		t.Fatal("session/new: no session id")
	}
	return sid
}

func sharedLimitEndToEnd(t *testing.T, twoProcesses bool, by string) {
	state, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	cfgPath := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgPath, []byte("[recovery]\njitter = 0.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		return map[string]string{"REBOUND_STATE_DIR": state, "OPENAI_API_KEY": "sk-test-key-123456", "OPENAI_BASE_URL": "http://127.0.0.1/v1",
			"REBOUND_CONFIG": cfgPath, "REBOUND_MODEL": "mock-model", "REBOUND_STREAMING": "held"}[k]
	}
	mock := mockprovider.New(&mockprovider.Script{Bucket: &mockprovider.Bucket{Requests: 2, Window: "10s"}, Fallback: &mockprovider.Step{Text: "Answered."}})
	// Another client of the provider uses up the window.
	start := time.Now()
	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/v1/chat/completions", strings.NewReader(`{"model":"mock-model","messages":[{"role":"user","content":"elsewhere"}]}`))
		resp, err := mock.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the other client: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	reset := start.Add(10 * time.Second)

	var stderr bytes.Buffer
	var stderrMu sync.Mutex
	e := env{getenv: getenv, home: home, httpClient: mock}
	agentA := startE2EAgent(t, e, lockedWriter{&stderrMu, &stderr})
	agentA.send(t, 0, "initialize", map[string]any{"protocolVersion": 1})
	agentA.await(t, 0)
	agentB := agentA
	if twoProcesses {
		agentB = startE2EAgent(t, e, lockedWriter{&stderrMu, &stderr})
		agentB.send(t, 0, "initialize", map[string]any{"protocolVersion": 1})
		agentB.await(t, 0)
	}
	sidA := agentA.newSession(t, 1, cwd)
	sidB := agentB.newSession(t, 2, cwd)
	prompt := func(sid, text string) map[string]any {
		return map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}
	}
	agentA.send(t, 10, "session/prompt", prompt(sidA, "from A"))
	synctest.Wait() // A's request is refused; A waits for its retry
	time.Sleep(time.Second)
	agentB.send(t, 11, "session/prompt", prompt(sidB, "from B"))
	for _, w := range []struct {
		a  *e2eAgent
		id int
	}{{agentA, 10}, {agentB, 11}} {
		res, _ := w.a.await(t, w.id)["result"].(map[string]any)
		if res["stopReason"] != "end_turn" {
			t.Errorf("prompt %d: %v, want end_turn", w.id, res)
		}
	}
	for _, a := range []*e2eAgent{agentA, agentB} {
		a.in.Close()
		if code := <-a.done; code != 0 {
			t.Errorf("rebound exited %d; stderr:\n%s", code, stderr.String())
		}
		if !twoProcesses {
			break
		}
	}

	// The provider: one refusal, and nothing of Rebound's between it and
	// the reset.
	var refused int
	for _, r := range mock.Requests()[2:] {
		switch {
		case r.Status == http.StatusTooManyRequests:
			refused++
		case r.Status == http.StatusOK && r.Time.Before(reset):
			t.Errorf("request %d was sent at %v, before the reset at 10s", r.Seq, r.Time.Sub(start))
		}
	}
	if n := len(mock.Requests()); refused != 1 || n != 5 {
		t.Errorf("%d requests, %d refused: want 5 (2 of the other client's, A's refused, B's, A's retry), 1 refused", n, refused)
	}

	// B's wait: recorded in its log as a shared hold by another chat or
	// process, and shown to the editor as a card.
	loaded, err := session.Load(filepath.Join(state, "sessions", sidB+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, ev := range loaded.Events {
		if ev.Type != "llm/retry" {
			continue
		}
		data, _ := json.Marshal(ev)
		var r struct {
			Data struct {
				Policy  string `json:"policy"`
				Failure struct {
					Held *recovery.Held `json:"held"`
				} `json:"failure"`
			} `json:"data"`
		}
		json.Unmarshal(data, &r)
		if r.Data.Policy == recovery.PolicyShared && r.Data.Failure.Held != nil && r.Data.Failure.Held.By == by {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("B's log has no llm/retry of policy shared held by %q: %+v", by, loaded.Events)
	}
	agentB.mu.Lock()
	defer agentB.mu.Unlock()
	var card bool
	for _, m := range agentB.msgs {
		line, _ := json.Marshal(m)
		if m["method"] == "session/update" && bytes.Contains(line, []byte(sidB)) && bytes.Contains(line, []byte(`"tool_call"`)) &&
			bytes.Contains(line, []byte(fmt.Sprintf("%s reached the provider's rate limit", by))) {
			card = true
		}
	}
	if !card {
		t.Errorf("the editor was shown no card of B's hold by %q", by)
	}
}
