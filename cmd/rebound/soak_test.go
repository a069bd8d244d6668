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
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// TestSoak runs one in-process server (as the golden harness does, on
// synctest's fake clock) with many sessions prompting at once over one
// connection, each against its own fault script: drops, 500s, 429s with
// Retry-After, stalls, tool calls, cancels, exhausted recovery, and loads
// between turns. More sessions than agent.DefaultMaxOpenLogs, so logs are
// closed and reopened under load. It checks, with -race:
//   - every request gets exactly one answer, and each prompt the one its
//     script calls for (end_turn, cancelled, or an error);
//   - no update crosses sessions: each session's text carries its own tag
//     and no other's;
//   - every log loads, with every turn closed.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak test")
	}
	for _, mode := range []string{"held", "live"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { soak(t, mode, 80) })
		})
	}
}

var soakTag = regexp.MustCompile(`\[s\d+\]`)

// soakKind is one session's first turn: its script and what the prompt
// must be answered with. Every second turn is a plain reply.
type soakKind struct {
	name   string
	steps  func(tag string) []mockprovider.Step
	want   string // stop reason, or "error"
	cancel bool   // the client cancels 1.5 s into the turn
}

func intp(n int) *int { return &n }

var soakKinds = []soakKind{
	{name: "plain", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Text: "Plain reply for " + tag + ".", Chunks: 3}}
	}},
	{name: "500 then ok", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Status: 500}, {Text: "Recovered from a 500 for " + tag + ".", Chunks: 2}}
	}},
	{name: "drop then ok", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Text: "Dropped reply for " + tag + " goes on.", Chunks: 4, DropAfter: intp(2)}, {Text: "Dropped reply for " + tag + " goes on.", Chunks: 2}}
	}},
	{name: "stall then ok", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Text: "Stalled reply for " + tag + ".", Chunks: 4, StallAfter: intp(1)}, {Text: "Stalled reply for " + tag + ".", Chunks: 2}}
	}},
	{name: "tool call", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{
			{ToolCalls: []mockprovider.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
			{Text: "The notes of " + tag + " are read."},
		}
	}},
	{name: "cancel", want: "cancelled", cancel: true, steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Text: "A slow reply for " + tag + " that is cancelled.", Chunks: 5, ChunkDelay: "1s"}}
	}},
	{name: "429 with Retry-After", want: "end_turn", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Status: 429, Headers: map[string]string{"Retry-After": "1"}}, {Text: "After the rate limit, " + tag + "."}}
	}},
	{name: "exhausted", want: "error", steps: func(tag string) []mockprovider.Step {
		return []mockprovider.Step{{Status: 503}, {Status: 503}, {Status: 503}}
	}},
}

// soakRouter sends each provider request to the mock of the session whose
// tag its messages carry: every session has its own script, whatever order
// the requests arrive in.
type soakRouter struct {
	t     *testing.T
	mocks map[string]*mockprovider.Mock
}

func (r *soakRouter) Do(req *http.Request) (*http.Response, error) {
	if req.Body == nil { // GET /models: no session's; the mock has no list
		return mockprovider.New(nil).Do(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	m := r.mocks[string(soakTag.Find(body))]
	if m == nil {
		r.t.Errorf("a provider request carries no session's tag: %.200s", body)
		m = mockprovider.New(nil)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return m.Do(req)
}

// soakClient is the editor's side of the one connection.
type soakClient struct {
	t       *testing.T
	wmu     sync.Mutex
	in      io.Writer
	nextID  atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan map[string]any
	answers map[int64]int
	sent    map[int64]string
	text    map[string]*strings.Builder // sessionId → every message chunk's text
}

func (c *soakClient) call(method string, params any) map[string]any {
	id := c.nextID.Add(1)
	ch := make(chan map[string]any, 1)
	c.mu.Lock()
	c.waiting[id] = ch
	c.sent[id] = method
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.send(b)
	return <-ch
}

func (c *soakClient) send(line []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.in.Write(append(line, '\n')); err != nil {
		c.t.Errorf("write to the agent: %v", err)
	}
}

func (c *soakClient) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var msg map[string]any
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			c.t.Errorf("not JSON: %q", sc.Text())
			continue
		}
		method, _ := msg["method"].(string)
		switch {
		case method == "session/update":
			params := msg["params"].(map[string]any)
			sid, _ := params["sessionId"].(string)
			u, _ := params["update"].(map[string]any)
			if u["sessionUpdate"] == "agent_message_chunk" {
				content, _ := u["content"].(map[string]any)
				s, _ := content["text"].(string)
				c.mu.Lock()
				if c.text[sid] == nil {
					c.text[sid] = &strings.Builder{}
				}
				c.text[sid].WriteString(s)
				c.mu.Unlock()
			}
		case method != "":
			c.t.Errorf("the agent sent an unexpected %s", method)
		default:
			id := int64(msg["id"].(float64))
			c.mu.Lock()
			c.answers[id]++
			ch := c.waiting[id]
			delete(c.waiting, id)
			c.mu.Unlock()
			if ch == nil {
				c.t.Errorf("an answer to request %d, which is not waiting for one: %s", id, sc.Text())
				continue
			}
			ch <- msg
		}
	}
}

func soak(t *testing.T, mode string, sessions int) {
	stateDir, home := t.TempDir(), t.TempDir()
	configPath := filepath.Join(home, "config.toml")
	config := "[recovery]\njitter = 0.0\ninitial_delay = \"200ms\"\nmax_delay = \"1s\"\nstream_idle_timeout = \"2s\"\n"
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	router := &soakRouter{t: t, mocks: map[string]*mockprovider.Mock{}}
	type plan struct {
		tag  string
		cwd  string
		kind soakKind
	}
	var plans []plan
	for i := range sessions {
		tag := fmt.Sprintf("[s%d]", i)
		kind := soakKinds[i%len(soakKinds)]
		steps := append(kind.steps(tag), mockprovider.Step{Text: "Second turn of " + tag + ".", Chunks: 2})
		router.mocks[tag] = mockprovider.New(&mockprovider.Script{Steps: steps})
		cwd := t.TempDir()
		if err := os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("notes of "+tag+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		plans = append(plans, plan{tag: tag, cwd: cwd, kind: kind})
	}
	getenv := func(k string) string {
		switch k {
		case "REBOUND_STATE_DIR":
			return stateDir
		case "OPENAI_BASE_URL":
			return "http://mock.invalid/v1"
		case "REBOUND_CONFIG":
			return configPath
		case "OPENAI_API_KEY":
			return "sk-soak"
		case "REBOUND_STREAMING":
			return mode
		}
		return ""
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	var stderrMu sync.Mutex
	done := make(chan int, 1)
	go func() {
		done <- runEnv(t.Context(), nil, inR, outW, lockedWriter{&stderrMu, &stderr}, env{getenv: getenv, home: home, httpClient: router})
		outW.Close()
	}()
	c := &soakClient{t: t, in: inW, waiting: map[int64]chan map[string]any{}, answers: map[int64]int{}, sent: map[int64]string{},
		text: map[string]*strings.Builder{}}
	read := make(chan struct{})
	go func() {
		defer close(read)
		c.read(outR)
	}()
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{
		"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false}})

	ids := make([]string, sessions)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Go(func() {
			res := c.call("session/new", map[string]any{"cwd": p.cwd, "mcpServers": []any{}})
			sid, _ := res["result"].(map[string]any)["sessionId"].(string)
			if sid == "" {
				t.Errorf("%s: session/new = %v", p.tag, res)
				return
			}
			ids[i] = sid
			prompt := func(n int, want string, cancel bool) {
				params := map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%s turn %d", p.tag, n)}}}
				if cancel {
					go func() {
						time.Sleep(1500 * time.Millisecond)
						b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": sid}})
						c.send(b)
					}()
				}
				res := c.call("session/prompt", params)
				got := "error"
				if r, ok := res["result"].(map[string]any); ok {
					got, _ = r["stopReason"].(string)
				}
				if got != want {
					t.Errorf("%s (%s) turn %d: answered %v, want %s", p.tag, p.kind.name, n, res, want)
				}
			}
			prompt(1, p.kind.want, p.kind.cancel)
			if i%2 == 0 {
				res := c.call("session/load", map[string]any{"sessionId": sid, "cwd": p.cwd, "mcpServers": []any{}})
				if res["result"] == nil {
					t.Errorf("%s: session/load = %v", p.tag, res)
				}
			}
			prompt(2, "end_turn", false)
		})
	}
	wg.Wait()
	inW.Close()
	if code := <-done; code != 0 {
		t.Errorf("rebound exited %d", code)
	}
	<-read
	synctest.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	for id, method := range c.sent {
		if n := c.answers[id]; n != 1 {
			t.Errorf("request %d (%s) got %d answers, want exactly 1", id, method, n)
		}
	}
	for i, sid := range ids {
		if sid == "" {
			continue
		}
		tag := plans[i].tag
		text := c.text[sid].String()
		if !strings.Contains(text, tag) && plans[i].kind.name != "exhausted" && plans[i].kind.name != "cancel" {
			t.Errorf("%s: its replies never reached it: %q", tag, text)
		}
		for _, other := range soakTag.FindAllString(text, -1) {
			if other != tag {
				t.Errorf("%s was shown text of %s: %q", tag, other, text)
				break
			}
		}
		ld, err := session.Load(session.Path(stateDir, sid))
		if err != nil {
			t.Errorf("%s: the log does not load: %v", tag, err)
			continue
		}
		ends := 0
		for _, ev := range ld.Events {
			if ev.Type == session.TypeTurnEnd {
				ends++
			}
		}
		if ld.OpenTurn != 0 || ends != 2 {
			t.Errorf("%s: %d turns ended, turn %d open; want 2 and none", tag, ends, ld.OpenTurn)
		}
	}
	if t.Failed() {
		t.Logf("rebound's stderr (tail):\n%s", tail(stderr.String(), 4000))
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
