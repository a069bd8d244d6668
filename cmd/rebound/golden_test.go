package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/tools/txtar"

	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/mcp/mcpmock"
	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

var update = golden.Update

// connectMockMCP serves a scenario's MCP servers in process: a subprocess
// would stall the bubble's clock. A server whose env asks for mcpmock is
// the mock (the e2e tests run the real stdio path); one that also asks to
// exit at once fails to start, as that subprocess would.
func connectMockMCP(ctx context.Context, sp mcp.Spec) (mcp.Transport, error) {
	env := map[string]string{}
	for _, kv := range sp.Env {
		env[kv.Name] = kv.Value
	}
	switch {
	case env[mcpmock.EnvServe] != "1":
		return nil, fmt.Errorf("golden test: %s is not the mock MCP server (set %s=1)", sp.Command, mcpmock.EnvServe)
	case env[mcpmock.EnvExitAtOnce] == "1":
		return nil, errors.New("exit status 1: mcpmock: exiting at once as asked (the golden test's stand-in for the process)")
	}
	client, server := sdkmcp.NewInMemoryTransports()
	go mcpmock.Serve(context.WithoutCancel(ctx), server, mcpmock.Options{})
	return client, nil
}

// TestGolden runs every scenario in testdata/scenarios against the real
// server in-process, on synctest's fake clock, and compares the transcript
// (both directions, the provider requests and the session log) with
// snapshots/<scenario>.jsonl.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios found: %v", err)
	}
	schema := loadACPSchema(t)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc := parseScenario(t, file)
			var got []byte
			synctest.Test(t, func(t *testing.T) {
				got = runScenario(t, sc, schema)
			})
			compareGolden(t, filepath.Join("..", "..", "snapshots", name+".jsonl"), got)
		})
	}
}

// TestGolden_EverySnapshotHasItsScenario: a snapshot whose scenario was
// renamed or removed pins nothing (TestGolden never reads it) yet still
// reads as a pinned transcript. -update removes it.
func TestGolden_EverySnapshotHasItsScenario(t *testing.T) {
	snaps, err := filepath.Glob(filepath.Join("..", "..", "snapshots", "*"))
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no snapshots found: %v", err)
	}
	for _, snap := range snaps {
		name, ok := strings.CutSuffix(filepath.Base(snap), ".jsonl")
		if ok {
			if _, err := os.Stat(filepath.Join("..", "..", "testdata", "scenarios", name+".txtar")); err == nil {
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
		}
		if *update {
			if err := os.Remove(snap); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !ok {
			t.Errorf("%s is not a scenario's snapshot (<scenario>.jsonl); remove it", snap)
			continue
		}
		t.Errorf("%s has no scenario testdata/scenarios/%s.txtar: restore the scenario, or remove the snapshot (go test ./cmd/rebound -run TestGolden -update)", snap, name)
	}
}

type scenario struct {
	script *mockprovider.Script
	client []string
	env    map[string]string
	config string            // config.toml
	files  map[string][]byte // cwd/<path> sections: the project tree, made under $CWD
	links  [][2]string       // symlinks section: "path target" lines, path under $CWD
	state  map[string][]byte // state/<path> sections: files put in the state dir first (a log left by a crash)
	exit   int               // exit section: the exit code every run of the agent ends with (0 unless given)
	// gate section: the holds the shared rate-limit gate every session
	// shares asks for, in turn, one a line: "8s cooldown another chat
	// x-ratelimit-reset-requests" (for, reason, by, source; "none" for no
	// hold). The real gate (package ratelimit) is tested on its own; here
	// it is scripted, so a transcript pins how a hold is shown.
	gate []testkit.GateHold
}

// goldenConfig is used when a scenario has no config.toml: the defaults, but
// without jitter, so the transcripts pin exact delays.
const goldenConfig = "[recovery]\njitter = 0.0\n"

func parseScenario(t *testing.T, path string) scenario {
	t.Helper()
	ar, err := txtar.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Scenarios run held unless their env says REBOUND_STREAMING=live: the
	// held transcripts were pinned before live mode existed and keep passing.
	sc := scenario{env: map[string]string{"OPENAI_API_KEY": "sk-test-key", "REBOUND_STREAMING": "held"}, config: goldenConfig, files: map[string][]byte{}, state: map[string][]byte{}}
	for _, f := range ar.Files {
		if rel, ok := strings.CutPrefix(f.Name, "cwd/"); ok {
			sc.files[rel] = f.Data
			continue
		}
		if rel, ok := strings.CutPrefix(f.Name, "state/"); ok {
			sc.state[rel] = f.Data
			continue
		}
		switch f.Name {
		case "symlinks":
			for line := range strings.SplitSeq(strings.TrimSpace(string(f.Data)), "\n") {
				path, target, ok := strings.Cut(line, " ")
				if !ok {
					t.Fatalf("%s: symlinks: want \"path target\", got %q", path, line)
				}
				sc.links = append(sc.links, [2]string{path, target})
			}
		case "script.json":
			if sc.script, err = mockprovider.ParseScript(f.Data); err != nil {
				t.Fatalf("%s: script.json: %v", path, err)
			}
		case "client.jsonl":
			for line := range strings.SplitSeq(string(f.Data), "\n") {
				if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
					sc.client = append(sc.client, line)
				}
			}
		case "config.toml":
			sc.config = string(f.Data)
		case "gate":
			for line := range strings.SplitSeq(strings.TrimSpace(string(f.Data)), "\n") {
				sc.gate = append(sc.gate, parseHold(t, path, line))
			}
		case "exit":
			if sc.exit, err = strconv.Atoi(strings.TrimSpace(string(f.Data))); err != nil {
				t.Fatalf("%s: exit: %v", path, err)
			}
		case "env":
			for line := range strings.SplitSeq(strings.TrimSpace(string(f.Data)), "\n") {
				k, v, _ := strings.Cut(line, "=")
				sc.env[k] = v
			}
		default:
			t.Fatalf("%s: unknown section %q", path, f.Name)
		}
	}
	if sc.script == nil {
		sc.script = &mockprovider.Script{}
	}
	return sc
}

// parseHold reads a line of a scenario's gate section.
func parseHold(t *testing.T, path, line string) testkit.GateHold {
	t.Helper()
	if line == "none" {
		return testkit.GateHold{}
	}
	f := strings.Fields(line)
	if len(f) < 4 {
		t.Fatalf("%s: gate: want \"for reason by… source\", got %q", path, line)
	}
	d, err := time.ParseDuration(f[0])
	if err != nil {
		t.Fatalf("%s: gate: %v", path, err)
	}
	return testkit.GateHold{For: d, Reason: f[1], By: strings.Join(f[2:len(f)-1], " "), Source: f[len(f)-1]}
}

// process is one in-process run of the agent, as an editor would see it.
type process struct {
	in   *io.PipeWriter
	done chan int
	// replies to the agent's requests are written by their own goroutine:
	// the transcript reader must never block on the agent's stdin while the
	// agent blocks on its stdout.
	replies chan string
	written chan struct{}
}

// transcript records messages in both directions with the fake time at which
// they crossed.
type transcript struct {
	mu          sync.Mutex
	start       time.Time
	lines       []string
	schema      *acpSchema
	ids         map[string]string // JSON-RPC id → method, to validate results
	t           *testing.T
	lastSession string
	lastCursor  string                   // the last session/list nextCursor, for $CURSOR
	answered    map[string]chan struct{} // request id → closed when its response arrived
	// replies are the scripted answers to the agent's requests, by method,
	// in order; reply writes one to the agent.
	replies map[string][]string
	reply   func(line string)
}

func (tr *transcript) add(dir, line string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var msg map[string]any
	if err := json.Unmarshal([]byte(line), &msg); err != nil {
		if dir == "recv" {
			tr.t.Errorf("the agent wrote a line that is not a JSON object: %q", line)
		}
		tr.lines = append(tr.lines, canonical(map[string]any{"dir": dir, "ms": time.Since(tr.start).Milliseconds(), "raw": line}))
		return
	}
	if dir == "recv" {
		tr.schema.validate(tr.t, line, tr.ids)
		if m, ok := msg["method"].(string); ok && msg["id"] != nil {
			defer tr.answer(m, msg["id"])
		}
		if _, isReq := msg["method"]; !isReq && msg["id"] != nil {
			if ch, ok := tr.answered[fmt.Sprint(msg["id"])]; ok {
				close(ch)
				delete(tr.answered, fmt.Sprint(msg["id"]))
			}
		}
		if res, ok := msg["result"].(map[string]any); ok {
			if id, ok := res["sessionId"].(string); ok {
				tr.lastSession = id
			}
			if c, ok := res["nextCursor"].(string); ok {
				tr.lastCursor = c
			}
		}
	} else if m, ok := msg["method"].(string); ok && msg["id"] != nil {
		tr.ids[fmt.Sprint(msg["id"])] = m
		tr.answered[fmt.Sprint(msg["id"])] = make(chan struct{})
	}
	ms := time.Since(tr.start).Milliseconds()
	tr.lines = append(tr.lines, canonical(map[string]any{"dir": dir, "ms": ms, "msg": msg}))
}

// answer sends the next scripted reply to a request from the agent. A
// scripted "hold" is never answered (the editor is still asking the user);
// a request with no scripted reply fails the test and gets an error, so the
// agent is not left waiting.
func (tr *transcript) answer(method string, id any) {
	idJSON, _ := json.Marshal(id)
	queue := tr.replies[method]
	var result string
	if len(queue) == 0 {
		tr.t.Errorf("the agent sent %s, but the scenario scripts no reply for it (add `reply %s {...}`)", method, method)
		result = `{"error":{"code":-32603,"message":"golden: no reply scripted"}}`
	} else {
		result, tr.replies[method] = queue[0], queue[1:]
	}
	if result == "hold" {
		return
	}
	line := `{"jsonrpc":"2.0","id":` + string(idJSON) + `,` + result[1:]
	tr.lines = append(tr.lines, canonical(map[string]any{"dir": "send", "ms": time.Since(tr.start).Milliseconds(), "msg": mustDecode(line)}))
	tr.reply(line)
}

func mustDecode(line string) any {
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		panic(fmt.Sprintf("scripted reply is not JSON: %v: %s", err, line))
	}
	return v
}

func runScenario(t *testing.T, sc scenario, schema *acpSchema) []byte {
	stateDir := t.TempDir()
	cwd := t.TempDir()
	for rel, data := range sc.files {
		path := filepath.Join(cwd, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range sc.links {
		if err := os.Symlink(strings.ReplaceAll(l[1], "$CWD", cwd), filepath.Join(cwd, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	for rel, data := range sc.state {
		path := filepath.Join(stateDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), "$CWD", cwd)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	configPath := filepath.Join(home, "config.toml")
	if err := os.WriteFile(configPath, []byte(sc.config), 0o600); err != nil {
		t.Fatal(err)
	}
	mock := mockprovider.New(sc.script)
	var gates func(string) recovery.Gate
	if sc.gate != nil {
		gate := &testkit.Gate{Holds: sc.gate}
		gates = func(string) recovery.Gate { return gate }
	}
	tr := &transcript{start: time.Now(), schema: schema, ids: map[string]string{}, answered: map[string]chan struct{}{}, t: t,
		replies: map[string][]string{}}
	var current *process // the running agent, whose stdin replies go to
	tr.reply = func(line string) {
		select {
		case current.replies <- line:
		default:
			t.Errorf("more than %d replies to the agent waiting to be written", cap(current.replies))
		}
	}
	var stderr bytes.Buffer
	var stderrMu sync.Mutex
	getenv := func(k string) string {
		if k == "REBOUND_STATE_DIR" {
			return stateDir
		}
		if k == "OPENAI_BASE_URL" {
			// Loopback, as `rebound mock-provider` listens: under
			// provider.stream_usage auto the usage chunk is asked for.
			// The in-process mock answers whatever the host.
			return "http://127.0.0.1/v1"
		}
		if k == "REBOUND_CONFIG" {
			return configPath
		}
		return sc.env[k]
	}

	start := func() *process {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		p := &process{in: inW, done: make(chan int, 1), replies: make(chan string, 256), written: make(chan struct{})}
		go func() {
			defer close(p.written)
			for line := range p.replies {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Errorf("write reply %q: %v", line, err)
				}
			}
		}()
		go func() {
			code := runEnv(t.Context(), nil, inR, outW, lockedWriter{&stderrMu, &stderr}, env{getenv: getenv, home: home, httpClient: mock, mcpConnect: connectMockMCP, executable: goldenExecutable, gates: gates})
			outW.Close()
			p.done <- code
		}()
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 64<<20)
			for sc.Scan() {
				tr.add("recv", sc.Text())
			}
		}()
		return p
	}
	stop := func(p *process) {
		tr.mu.Lock()
		close(p.replies)
		tr.mu.Unlock()
		<-p.written
		p.in.Close()
		if code := <-p.done; code != sc.exit {
			t.Errorf("rebound exited %d, want %d; stderr:\n%s", code, sc.exit, stderr.String())
		}
	}

	// awaitAll lets fake time run until every request sent so far has its
	// response: a retry's wait passes in no real time.
	awaitAll := func() {
		tr.mu.Lock()
		var pending []chan struct{}
		for _, ch := range tr.answered {
			pending = append(pending, ch)
		}
		tr.mu.Unlock()
		for _, ch := range pending {
			<-ch
		}
	}
	// kept holds each log as it was before the last session/delete: a log
	// that is gone at the end was deleted, and its events still count when
	// the promises are checked (its requests were made, its chunks shown).
	kept := map[string][]session.Event{}
	keepLogs := func() {
		paths, _ := filepath.Glob(filepath.Join(stateDir, "sessions", "*.jsonl"))
		for _, path := range paths {
			if loaded, err := session.Load(path); err == nil {
				kept[path] = loaded.Events
			}
		}
	}
	p := start()
	current = p
	for _, line := range sc.client {
		line = strings.ReplaceAll(line, "$CWD", cwd)
		switch {
		case strings.HasPrefix(line, "reply "):
			// reply METHOD RESULT-JSON | reply METHOD error ERROR-JSON |
			// reply METHOD hold: queue the answer to the agent's next METHOD.
			method, answer, _ := strings.Cut(strings.TrimPrefix(line, "reply "), " ")
			switch {
			case answer == "hold":
			case strings.HasPrefix(answer, "error "):
				answer = `{"error":` + strings.TrimPrefix(answer, "error ") + `}`
			default:
				answer = `{"result":` + answer + `}`
			}
			if answer != "hold" {
				mustDecode(answer)
			}
			tr.mu.Lock()
			tr.replies[method] = append(tr.replies[method], answer)
			tr.mu.Unlock()
			continue
		case strings.HasPrefix(line, "sleep "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "sleep "))
			if err != nil {
				t.Fatalf("bad directive %q", line)
			}
			time.Sleep(d)
		case strings.HasPrefix(line, "login "):
			// login KEY: meanwhile the user runs `rebound login` in a
			// terminal and types KEY (the same HOME, so the same
			// credentials file).
			var out, errOut bytes.Buffer
			key := strings.TrimPrefix(line, "login ")
			if code := runEnv(t.Context(), []string{"login"}, strings.NewReader(key+"\n"), &out, &errOut, env{getenv: getenv, home: home}); code != 0 {
				t.Fatalf("rebound login exited %d: %s", code, errOut.String())
			}
			if strings.Contains(out.String()+errOut.String(), key) {
				t.Errorf("rebound login printed the key")
			}
			continue
		case strings.HasPrefix(line, "chmod "):
			// chmod MODE FILE: FILE under ~/.config/rebound.
			mode, file, _ := strings.Cut(strings.TrimPrefix(line, "chmod "), " ")
			m, err := strconv.ParseUint(mode, 8, 32)
			if err != nil {
				t.Fatalf("bad directive %q", line)
			}
			if err := os.Chmod(filepath.Join(home, ".config", "rebound", file), os.FileMode(m)); err != nil {
				t.Fatal(err)
			}
			continue
		case line == "restart":
			awaitAll()
			stop(p)
			tr.mu.Lock()
			p = start()
			current = p
			tr.mu.Unlock()
		default:
			// "nowait" sends a request without waiting for its response (a
			// prompt that will be cancelled, or refused as busy).
			line, nowait := strings.CutPrefix(line, "nowait ")
			if strings.Contains(line, `"method":"session/delete"`) {
				keepLogs() // what the delete may remove still counts for the promises
			}
			tr.mu.Lock()
			line = strings.ReplaceAll(line, "$SESSION", tr.lastSession)
			line = strings.ReplaceAll(line, "$CURSOR", tr.lastCursor)
			tr.mu.Unlock()
			tr.add("send", line)
			if _, err := io.WriteString(p.in, line+"\n"); err != nil {
				t.Fatalf("write %q: %v", line, err)
			}
			if !nowait {
				awaitAll()
			}
		}
		synctest.Wait()
	}
	awaitAll()
	stop(p)
	synctest.Wait()

	var out bytes.Buffer
	for _, l := range tr.lines {
		out.WriteString(l + "\n")
	}
	placed := false // the provider was sent a path of this run's temporary directories
	for _, r := range mock.Requests() {
		line := canonical(map[string]any{"dir": "provider", "ms": r.Time.Sub(tr.start).Milliseconds(), "request": r})
		placed = placed || strings.Contains(line, cwd) || strings.Contains(line, home) || strings.Contains(line, stateDir)
		out.WriteString(line + "\n")
	}
	// The model list is asked outside any step; how often shows its cache.
	if n := mock.ModelListRequests(); n > 0 {
		out.WriteString(canonical(map[string]any{"dir": "provider", "modelListRequests": n}) + "\n")
	}
	logs, _ := filepath.Glob(filepath.Join(stateDir, "sessions", "*.jsonl"))
	// Logs in the order their sessions first appear in the transcript (a
	// scenario with several sessions), not by their random names.
	transcript := strings.Join(tr.lines, "\n")
	firstSeen := func(path string) int {
		if i := strings.Index(transcript, strings.TrimSuffix(filepath.Base(path), ".jsonl")); i >= 0 {
			return i
		}
		return len(transcript)
	}
	slices.SortStableFunc(logs, func(a, b string) int { return cmp.Compare(firstSeen(a), firstSeen(b)) })
	var events []session.Event
	for _, path := range logs {
		loaded, err := session.Load(path)
		if err != nil {
			t.Errorf("session log %s is invalid: %v", filepath.Base(path), err)
			continue
		}
		for _, ev := range loaded.Events {
			schema.validateEvent(t, ev)
			out.WriteString(canonical(map[string]any{"dir": "log", "event": ev}) + "\n")
		}
		events = append(events, ownEvents(loaded.Events)...)
	}
	for path, evs := range kept {
		if !slices.Contains(logs, path) {
			events = append(events, evs...)
		}
	}
	// Steps of a log the scenario put in place were never sent here.
	seeded := 0
	for _, data := range sc.state {
		seeded += strings.Count(string(data), `"type":"step/start"`)
	}
	checkPromises(t, tr.lines, events, len(mock.Requests())+seeded)
	for method, queue := range tr.replies {
		if len(queue) > 0 {
			t.Errorf("%d scripted replies to %s were never asked for", len(queue), method)
		}
	}
	if t.Failed() {
		t.Logf("rebound's stderr:\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "sk-test-key") || strings.Contains(out.String(), "sk-test-key") {
		t.Errorf("the API key leaked into the output or the logs")
	}
	// A key typed into a sign-in form (a scripted elicitation/create
	// reply) is sent, and must come back nowhere.
	for _, key := range formKeys.FindAllStringSubmatch(strings.Join(sc.client, "\n"), -1) {
		for _, l := range tr.lines {
			if strings.Contains(l, `"dir":"recv"`) && strings.Contains(l, key[1]) {
				t.Errorf("the API key typed into a form came back: %s", l)
			}
		}
		if strings.Contains(stderr.String(), key[1]) {
			t.Errorf("the API key typed into a form is in the logs")
		}
	}
	out2 := bytes.ReplaceAll(out.Bytes(), []byte(cwd), []byte("$CWD"))
	out2 = bytes.ReplaceAll(out2, []byte(home), []byte("$HOME"))
	if placed {
		// The mock counts the tokens of what it was sent, whose paths differ
		// in length between runs and machines: the figures would too. Still
		// a number (0), so what reads the snapshots' logs decodes them.
		out2 = usedTokens.ReplaceAll(out2, []byte(`"$1":0`))
	}
	return normalise(out2)
}

// ownEvents are the events of a log less those a session/fork copied from
// its parent (session.SessionStart.ForkedFrom): everything up to the
// parent's last copied turn/end. The parent's log has them already.
func ownEvents(events []session.Event) []session.Event {
	if len(events) == 0 {
		return events
	}
	var start session.SessionStart
	if json.Unmarshal(events[0].Data, &start) != nil || start.ForkedFrom == nil || start.ForkedFrom.Turn == 0 {
		return events
	}
	for i, ev := range events {
		var end session.TurnEnd
		if ev.Type == session.TypeTurnEnd && json.Unmarshal(ev.Data, &end) == nil && end.Turn == start.ForkedFrom.Turn {
			return append(events[:1:1], events[i+1:]...)
		}
	}
	return events
}

// formKeys finds the API keys scripted replies type into sign-in forms.
var formKeys = regexp.MustCompile(`"apiKey":"([^"]+)"`)

// usedTokens are the token figures of a usage_update and of a step/end's
// usage, and of a prompt's usage, that count the request.
var usedTokens = regexp.MustCompile(`"(used|promptTokens|inputTokens|totalTokens)":[0-9]+`)

// checkPromises asserts, for every scenario, what Rebound promises whatever
// the faults: one provider request per step, each turn's steps are its first
// attempt plus the retries it scheduled, and every agent_message_chunk the
// editor saw belongs to a committed message whose text it reproduces exactly,
// once: nothing from a failed attempt is ever shown.
func checkPromises(t *testing.T, lines []string, events []session.Event, requests int) {
	t.Helper()
	steps, summaries, answered := 0, 0, 0
	// A turn's steps are one per logical request (each ends with a
	// committed message, but the last may have ended uncommitted: failed or
	// cancelled) plus one per retry whose wait ended.
	stepsPerTurn, retriesPerTurn := map[int]int{}, map[int]int{}
	messagesPerTurn, openPerTurn := map[int]int{}, map[int]int{}
	committed := map[string]string{} // messageId → text
	// A retry scheduled before a turn's first step (/retry wait's) starts
	// that step, not one more.
	beforeFirst := map[string]bool{}
	for _, ev := range events {
		var d struct {
			Turn      int    `json:"turn"`
			Step      int    `json:"step"`
			MessageID string `json:"messageId"`
			Text      string `json:"text"`
			Model     string `json:"model"`
			RetryID   string `json:"retryId"`
			Retry     int    `json:"retry"`
			Policy    string `json:"policy"`
		}
		json.Unmarshal(ev.Data, &d)
		key := fmt.Sprint(d.RetryID, "/", d.Retry)
		switch ev.Type {
		case session.TypeLLMRetry:
			// A hold on the shared rate limit (policy shared) delays a
			// step, after its retry's wait or before it: it starts none.
			beforeFirst[key] = d.Step == 0 || d.Policy == recovery.PolicyShared
		case session.TypeStepStart:
			if d.Model == "" {
				answered++ // a slash command Rebound answered itself: no request
			}
			steps++
			stepsPerTurn[d.Turn]++
			openPerTurn[d.Turn] = 1
		case session.TypeLLMRetryStarted:
			if !beforeFirst[key] {
				retriesPerTurn[d.Turn]++
			}
		case session.TypeAssistantMessage:
			committed[d.MessageID] = d.Text
			messagesPerTurn[d.Turn]++
			openPerTurn[d.Turn] = 0
		case session.TypeCompaction:
			summaries++ // the summary is one direct provider request
		}
	}
	if steps-answered+summaries != requests {
		t.Errorf("%d steps and %d summaries in the logs but %d provider requests: one attempt must be one request", steps, summaries, requests)
	}
	for turn, n := range stepsPerTurn {
		if want := messagesPerTurn[turn] + openPerTurn[turn] + retriesPerTurn[turn]; n != want {
			t.Errorf("turn %d: %d steps for %d committed replies, %d uncommitted request and %d retries started", turn, n, messagesPerTurn[turn], openPerTurn[turn], retriesPerTurn[turn])
		}
	}
	shown := map[string]string{}
	// A replayed prompt is its own message: under its own messageId, and
	// with a reply's text before the next: codecompanion's restore draws
	// nothing of a tool call, so only text keeps two prompts apart there.
	lastPrompt, separated := "", false
	for _, l := range lines {
		var rec struct {
			Dir string `json:"dir"`
			Msg struct {
				Method string `json:"method"`
				Params struct {
					Update struct {
						Kind      string `json:"sessionUpdate"`
						MessageID string `json:"messageId"`
						Content   struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"update"`
				} `json:"params"`
			} `json:"msg"`
		}
		json.Unmarshal([]byte(l), &rec)
		switch u := rec.Msg.Params.Update; {
		case rec.Dir == "send" && rec.Msg.Method == "session/load":
			lastPrompt = ""
		case rec.Dir != "recv":
		case u.Kind == "user_message_chunk":
			if u.MessageID == "" {
				t.Errorf("user_message_chunk %q without a messageId", u.Content.Text)
			}
			if u.MessageID != lastPrompt && lastPrompt != "" && !separated {
				t.Errorf("prompt %s follows prompt %s with nothing between them that a client draws", u.MessageID, lastPrompt)
			}
			lastPrompt, separated = u.MessageID, false
		case u.Kind == "agent_message_chunk" && u.Content.Text != "":
			separated = true
		}
		if u := rec.Msg.Params.Update; rec.Dir == "recv" && u.Kind == "agent_message_chunk" {
			if strings.HasPrefix(u.MessageID, "rebound_end_") {
				// A replay's word on how a turn ended, Rebound's own
				// (agent/load.go), bracketed so it never passes for
				// the model's.
				if !strings.HasPrefix(strings.TrimLeft(u.Content.Text, "\n"), "[") || !strings.HasSuffix(u.Content.Text, "]") {
					t.Errorf("turn-end mark %q is not bracketed", u.Content.Text)
				}
				continue
			}
			if _, ok := committed[u.MessageID]; !ok {
				t.Errorf("agent_message_chunk %q with messageId %q that no assistant/message committed", u.Content.Text, u.MessageID)
			}
			shown[u.MessageID] += u.Content.Text
		}
	}
	for id, text := range shown {
		// A session/load replays a message once more, whole.
		if want := committed[id]; text != want && text != want+want {
			t.Errorf("message %s: the editor was shown %q, the log committed %q", id, text, want)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// canonical renders v as compact JSON with sorted keys and no HTML escaping,
// so snapshots read like what was on the wire and diff stably.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		panic(err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(generic); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

var (
	sessionIDs = regexp.MustCompile(`sess_[0-9a-f]{32}`)
	retryIDs   = regexp.MustCompile(`retry_[0-9a-f]{16}`)
	compactIDs = regexp.MustCompile(`cmp_[0-9a-f]{32}`)
	messageIDs = regexp.MustCompile(`msg_[0-9a-f]{32}`)
	statusIDs  = regexp.MustCompile(`rebound_status_[0-9a-f]{32}`)
	versions   = regexp.MustCompile(`"(agentVersion|version)":"` + regexp.QuoteMeta(release) + `-dev[^"]*"`)
)

// normalise replaces what differs between runs (random ids, the build's
// version) with stable names numbered in order of appearance.
func normalise(b []byte) []byte {
	for _, re := range []*regexp.Regexp{sessionIDs, messageIDs, retryIDs, compactIDs, statusIDs} {
		seen := map[string]string{}
		b = re.ReplaceAllFunc(b, func(m []byte) []byte {
			if n, ok := seen[string(m)]; ok {
				return []byte(n)
			}
			prefix := string(m[:bytes.LastIndexByte(m, '_')])
			n := fmt.Sprintf("%s_%d", prefix, len(seen)+1)
			seen[string(m)] = n
			return []byte(n)
		})
	}
	return versions.ReplaceAll(b, []byte(`"$1":"VERSION"`))
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Compare(t, path, got, *update, "go test ./cmd/rebound -run TestGolden -update")
}

// acpSchema validates what the agent writes against the pinned official ACP
// v1 schema: every message against the root, results and notifications also
// against the type their method names.
type acpSchema struct {
	root    *jsonschema.Schema
	results map[string]*jsonschema.Schema // method → result type
	params  map[string]*jsonschema.Schema // notification method → params type
	// unstable: method → result type of the unstable parts (unstable.json)
	unstable map[string]*jsonschema.Schema
	event    *jsonschema.Schema // a session log line (our own schema)
	retry    *jsonschema.Schema // _meta["rebound/retry"] (our own schema)
}

func loadACPSchema(t *testing.T) *acpSchema {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "acp-schema", "schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("acp.json", doc); err != nil {
		t.Fatal(err)
	}
	// The unstable parts Rebound implements (testdata/acp-schema/SOURCE.md).
	uf, err := os.Open(filepath.Join("..", "..", "testdata", "acp-schema", "unstable.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer uf.Close()
	udoc, err := jsonschema.UnmarshalJSON(uf)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("unstable.json", udoc); err != nil {
		t.Fatal(err)
	}
	compile := func(ref string) *jsonschema.Schema {
		s, err := c.Compile(ref)
		if err != nil {
			t.Fatalf("compile %s: %v", ref, err)
		}
		return s
	}
	return &acpSchema{
		root: compile("acp.json"),
		unstable: map[string]*jsonschema.Schema{
			"initialize":        compile("unstable.json#/$defs/InitializeResponse"),
			"session/prompt":    compile("unstable.json#/$defs/PromptResponse"),
			"session/fork":      compile("unstable.json#/$defs/ForkSessionResponse"),
			"providers/list":    compile("unstable.json#/$defs/ListProvidersResponse"),
			"providers/set":     compile("unstable.json#/$defs/SetProviderResponse"),
			"providers/disable": compile("unstable.json#/$defs/DisableProviderResponse"),
		},
		results: map[string]*jsonschema.Schema{
			"initialize":                compile("acp.json#/$defs/InitializeResponse"),
			"session/new":               compile("acp.json#/$defs/NewSessionResponse"),
			"session/load":              compile("acp.json#/$defs/LoadSessionResponse"),
			"session/prompt":            compile("acp.json#/$defs/PromptResponse"),
			"session/list":              compile("acp.json#/$defs/ListSessionsResponse"),
			"session/resume":            compile("acp.json#/$defs/ResumeSessionResponse"),
			"session/close":             compile("acp.json#/$defs/CloseSessionResponse"),
			"session/delete":            compile("acp.json#/$defs/DeleteSessionResponse"),
			"session/set_mode":          compile("acp.json#/$defs/SetSessionModeResponse"),
			"session/set_config_option": compile("acp.json#/$defs/SetSessionConfigOptionResponse"),
			"authenticate":              compile("acp.json#/$defs/AuthenticateResponse"),
		},
		params: map[string]*jsonschema.Schema{
			"session/update":             compile("acp.json#/$defs/SessionNotification"),
			"session/request_permission": compile("acp.json#/$defs/RequestPermissionRequest"),
			"fs/read_text_file":          compile("acp.json#/$defs/ReadTextFileRequest"),
			"fs/write_text_file":         compile("acp.json#/$defs/WriteTextFileRequest"),
			"terminal/create":            compile("acp.json#/$defs/CreateTerminalRequest"),
			"terminal/output":            compile("acp.json#/$defs/TerminalOutputRequest"),
			"terminal/wait_for_exit":     compile("acp.json#/$defs/WaitForTerminalExitRequest"),
			"terminal/kill":              compile("acp.json#/$defs/KillTerminalRequest"),
			"terminal/release":           compile("acp.json#/$defs/ReleaseTerminalRequest"),
			"$/cancel_request":           compile("acp.json#/$defs/CancelRequestNotification"),
			"elicitation/create":         compile("acp.json#/$defs/CreateElicitationRequest"),
		},
		event: compile(filepath.Join("..", "..", "schema", "session-event.schema.json")),
		retry: compile(filepath.Join("..", "..", "schema", "retry-progress.schema.json")),
	}
}

func (s *acpSchema) validateEvent(t *testing.T, ev session.Event) {
	t.Helper()
	b, _ := json.Marshal(ev)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err == nil {
		err = s.event.Validate(v)
	}
	if err != nil {
		t.Errorf("session event %d (%s) does not match schema/session-event.schema.json: %v", ev.Seq, ev.Type, err)
	}
}

func (s *acpSchema) validate(t *testing.T, line string, methods map[string]string) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
	if err != nil {
		t.Errorf("agent wrote invalid JSON: %q", line)
		return
	}
	if err := s.root.Validate(v); err != nil {
		t.Errorf("agent message does not validate against the ACP schema: %s\n%v", line, err)
	}
	msg, _ := v.(map[string]any)
	if res, ok := msg["result"]; ok {
		if sch := s.results[methods[fmt.Sprint(msg["id"])]]; sch != nil {
			if err := sch.Validate(res); err != nil {
				t.Errorf("result does not validate: %s\n%v", line, err)
			}
		}
		if sch := s.unstable[methods[fmt.Sprint(msg["id"])]]; sch != nil {
			if err := sch.Validate(res); err != nil {
				t.Errorf("result does not validate against testdata/acp-schema/unstable.json: %s\n%v", line, err)
			}
		}
	}
	if m, ok := msg["method"].(string); ok {
		if sch := s.params[m]; sch != nil {
			if err := sch.Validate(msg["params"]); err != nil {
				t.Errorf("%s params do not validate: %s\n%v", m, line, err)
			}
		}
		params, _ := msg["params"].(map[string]any)
		update, _ := params["update"].(map[string]any)
		meta, _ := update["_meta"].(map[string]any)
		if p, ok := meta["rebound/retry"]; ok {
			if err := s.retry.Validate(p); err != nil {
				t.Errorf("retry progress does not match schema/retry-progress.schema.json: %s\n%v", line, err)
			}
		}
	}
}

// goldenExecutable stands for os.Executable, whose answer (the test
// binary's temporary path) a snapshot can't pin.
func goldenExecutable() (string, error) { return "/opt/rebound/bin/rebound", nil }
