package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/agent/llm/mockprovider"
	"github.com/rebound-agent/rebound/config"
)

// demoEnv points the demo's agent at the built binary.
func demoEnv(t *testing.T, vars map[string]string) env {
	t.Helper()
	m := map[string]string{"REBOUND_DEMO_CHILD": reboundBinary(t)}
	for k, v := range vars {
		m[k] = v
	}
	return env{getenv: func(k string) string { return m[k] }, home: t.TempDir()}
}

func runDemoCmd(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a guard, not a wait
	defer cancel()
	var out, errb bytes.Buffer
	code = runEnv(ctx, append([]string{"demo"}, args...), strings.NewReader(""), &out, &errb, e)
	return code, out.String(), errb.String()
}

// summaryInt reads a number from the summary row named key.
func summaryInt(t *testing.T, out, key string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(key) + `\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("summary has no %q row:\n%s", key, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func summaryLogPath(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  session log\s+(\S+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("summary has no session log row:\n%s", out)
	}
	return m[1]
}

func skipShortDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
}

// The built-in demo, scaled for CI: every scene ends as expected, the
// summary counts one request per script step and nothing leaked.
func TestDemo_Fast(t *testing.T) {
	skipShortDemo(t)
	state := t.TempDir()
	e := demoEnv(t, nil) // builds the binary
	start := time.Now()
	code, out, stderr := runDemoCmd(t, e, "--fast", "--state-dir", state)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	t.Logf("demo --fast took %s\n%s", took, out)

	def, err := parseDemoDef(demoDefaultJSON)
	if err != nil {
		t.Fatal(err)
	}
	steps := len(def.script().Steps)

	if strings.ContainsAny(out, "\r\x1b") {
		t.Errorf("output to a non-terminal has carriage returns or escape codes:\n%q", out)
	}
	for _, sc := range def.Scenes {
		if !strings.Contains(out, "› you: "+sc.Prompt+"\n") {
			t.Errorf("output lacks the prompt %q", sc.Prompt)
		}
		if !strings.Contains(out, sc.Title) {
			t.Errorf("output lacks the scene title %q", sc.Title)
		}
		// The committed reply is the last step's text (the truncated
		// scene's reply is its parts joined).
		if sc.Expect == "end_turn" {
			want := sc.Steps[len(sc.Steps)-1].Text
			if sc.Title == "A truncated reply" {
				want = sc.Steps[1].Text + sc.Steps[2].Text
			}
			if !strings.Contains(out, "rebound: "+want+"\n") {
				t.Errorf("output lacks the reply %q", want)
			}
		}
	}
	for _, want := range []string{
		"↻ rate limited (429) · retrying in 0.1s · attempt 2 of 3\n",
		"↻ connection dropped · retrying in 0.1s · attempt 2 of 3\n",
		"↻ stream stalled (idle timeout) · retrying in 0.1s · attempt 2 of 3\n",
		"↻ overloaded (529) · retrying in 0.1s · attempt 2 of 3\n",
		"↻ overloaded (529) · switching to gpt-4o-mini · retrying in 0.1s\n",
		"↻ reply cut at the output limit · retrying with a larger output budget\n",
		"↻ reply cut at the output limit · asking the model to continue (part 2 of at most 4)\n",
		"↻ rate limited (429) · retrying in 0.8s · attempt 2 of 3\n",
		"› you: ■ stop (session/cancel)\n",
		"✗ rate limited (429) · wait cancelled after 0.",
		"✓ cancelled · 1 provider request",
		"✓ end_turn · 3 provider requests",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^  ↻ waited 0\.\ds, retrying$`).FindAllString(out, -1)); n != 5 {
		t.Errorf("%d \"waited\" lines, want one per retry with a wait (5)", n)
	}
	// The dropped and stalled attempts' text never reaches the user.
	for _, partial := range []string{"but fir", "stay silent", "max_del\n"} {
		if strings.Contains(out, partial) {
			t.Errorf("a failed attempt's text was shown: %q", partial)
		}
	}

	if n := summaryInt(t, out, "attempts made"); n != steps {
		t.Errorf("attempts made = %d, want %d (one per script step)", n, steps)
	}
	if !strings.Contains(out, "("+strconv.Itoa(steps)+" provider requests for 6 prompts)") {
		t.Errorf("summary does not count %d provider requests for 6 prompts:\n%s", steps, out)
	}
	if n := summaryInt(t, out, "scenes"); n != 6 || !strings.Contains(out, "6 of 6 as expected") {
		t.Errorf("scenes row: want 6 of 6 as expected:\n%s", out)
	}
	if !strings.Contains(out, "8 (RATE_LIMIT ×2, TRANSPORT ×1, TIMEOUT ×1, OVERLOADED ×2, truncated ×2)") {
		t.Errorf("faults met row is wrong:\n%s", out)
	}
	if n := summaryInt(t, out, "leaked to the editor"); n != 0 {
		t.Errorf("leaked to the editor = %d characters, want 0", n)
	}
	truncated := len([]rune(def.Scenes[4].Steps[0].Text))
	if n := summaryInt(t, out, "would have leaked"); n <= truncated {
		t.Errorf("would have leaked = %d characters, want more than the discarded truncated reply (%d) plus the dropped and stalled partial text", n, truncated)
	}
	m := regexp.MustCompile(`(?m)^  time spent waiting\s+(\d+\.\d)s$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no time spent waiting row:\n%s", out)
	}
	// Waits: 0.1 + 0.1 + 0.1 + 0.1 + 0.1 + ~0.15 (the cancel) at --fast.
	if w, _ := strconv.ParseFloat(m[1], 64); w < 0.5 || w > 5 {
		t.Errorf("time spent waiting = %ss, want about 0.7s", m[1])
	}
	logPath := summaryLogPath(t, out)
	if !strings.HasPrefix(logPath, state) {
		t.Errorf("session log %s is not under --state-dir %s", logPath, state)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("session log: %v", err)
	}
	if took > 20*time.Second {
		t.Errorf("demo --fast took %s", took)
	}
}

// Without --state-dir the session log lands in a new temporary directory,
// which is kept.
func TestDemo_DefaultStateDirIsKept(t *testing.T) {
	skipShortDemo(t)
	script := filepath.Join(t.TempDir(), "hello.json")
	if err := os.WriteFile(script, []byte(`{"steps": [{"text": "Hi."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--script", script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	logPath := summaryLogPath(t, out)
	t.Cleanup(func() { os.RemoveAll(filepath.Dir(filepath.Dir(logPath))) })
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("session log: %v", err)
	}
	if !strings.Contains(filepath.Base(filepath.Dir(filepath.Dir(logPath))), "rebound-demo-") {
		t.Errorf("session log %s is not in a rebound-demo- temporary directory", logPath)
	}
}

func TestDemo_ScriptDefinition(t *testing.T) {
	skipShortDemo(t)
	dir := t.TempDir()
	def := `{
  "recovery": {"jitter": 0, "initial_delay": "100ms", "max_retries": 1},
  "scenes": [
    {"title": "Server error", "prompt": "First question",
     "steps": [{"status": 503, "headers": {"Retry-After-Ms": "200"}}, {"text": "First answer.", "chunks": 2}],
     "expect": "end_turn"},
    {"title": "Gives up", "prompt": "Second question",
     "steps": [{"status": 500}, {"status": 500}],
     "expect": "error"}
  ]
}`
	path := filepath.Join(dir, "demo.json")
	if err := os.WriteFile(path, []byte(def), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--fast", "--script", path, "--state-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"[1/2] Server error\n",
		"› you: First question\n",
		"↻ server error (503) · retrying in 0.0s · attempt 2 of 2\n", // retry-after-ms 200 × 0.1
		"rebound: First answer.\n",
		"[2/2] Gives up\n",
		"↻ server error (500) · retrying in 0.0s · attempt 2 of 2\n",
		"rebound: ✗ The provider had a server error (500); gave up after 2 attempts",
		"✓ error · 2 provider requests",
		"2 of 2 as expected",
		"script    " + path,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := summaryInt(t, out, "attempts made"); n != 4 {
		t.Errorf("attempts made = %d, want 4", n)
	}
	if n := summaryInt(t, out, "leaked to the editor"); n != 0 {
		t.Errorf("leaked = %d", n)
	}
}

// A plain mock script: prompts go out one at a time until its steps are
// used up.
func TestDemo_ScriptMock(t *testing.T) {
	skipShortDemo(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "mock.json")
	script := `{"steps": [{"status": 429, "headers": {"Retry-After": "1"}}, {"text": "Plain reply.", "chunks": 2}, {"text": "Half of it", "chunks": 2, "drop_after": 1}, {"text": "Second reply."}]}`
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--fast", "--script", path, "--state-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"a mock script of 4 steps",
		"› you: Hello (prompt 1)\n",
		"↻ rate limited (429) · retrying in 0.1s · attempt 2 of 3\n",
		"rebound: Plain reply.\n",
		"› you: Hello (prompt 2)\n",
		"↻ connection dropped",
		"rebound: Second reply.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "prompt 3") || strings.Contains(out, "as expected") {
		t.Errorf("a third prompt, or expectations, for a plain script:\n%s", out)
	}
	if n := summaryInt(t, out, "attempts made"); n != 4 {
		t.Errorf("attempts made = %d, want 4", n)
	}
	if n := summaryInt(t, out, "would have leaked"); n != len("Half ") {
		t.Errorf("would have leaked = %d, want %d", n, len("Half "))
	}
}

// A scene that ends otherwise than expected makes the demo fail; so does a
// scene that leaves steps for the next one.
func TestDemo_UnexpectedOutcome(t *testing.T) {
	skipShortDemo(t)
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mismatch := write("mismatch.json", `{"scenes": [{"prompt": "Hi", "steps": [{"text": "Hello."}], "expect": "cancelled"}]}`)
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--fast", "--script", mismatch, "--state-dir", dir)
	if code != 1 || !strings.Contains(out, "✗ end_turn · 1 provider request") || !strings.Contains(out, "(expected cancelled)") ||
		!strings.Contains(stderr, "not every scene ended as expected") || !strings.Contains(out, "0 of 1 as expected") {
		t.Errorf("expectation mismatch: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}

	steps := write("steps.json", `{"scenes": [{"prompt": "Hi", "steps": [{"text": "Hello."}, {"text": "Meant for nobody."}]}, {"prompt": "Again", "steps": [{"text": "Bye."}]}]}`)
	code, _, stderr = runDemoCmd(t, demoEnv(t, nil), "--fast", "--script", steps, "--state-dir", dir)
	if code != 1 || !strings.Contains(stderr, "scene 1 (Scene 1) made 1 provider requests but has 2 steps") {
		t.Errorf("unused steps: exit %d\nstderr:\n%s", code, stderr)
	}
}

func TestDemo_BadScript(t *testing.T) {
	dir := t.TempDir()
	e := env{getenv: func(k string) string {
		if k == "REBOUND_DEMO_CHILD" {
			return "/nonexistent/rebound"
		}
		return ""
	}}
	for _, c := range []struct{ name, script, want string }{
		{"step", `{"scenes": [{"prompt": "Hi", "steps": [{"status": 429, "text": "x"}]}]}`, "scenes[0]: mock script: steps[0]: text: cannot be combined with status 429"},
		{"prompt", `{"scenes": [{"steps": []}]}`, "scenes[0]: prompt: missing"},
		{"expect", `{"scenes": [{"prompt": "Hi", "steps": [], "expect": "done"}]}`, `expect: "done" is not one of`},
		{"unknown", `{"scenes": [{"prompt": "Hi", "stpes": []}]}`, `unknown field "stpes"`},
		{"mock", `{"steps": [{"stauts": 500}]}`, `neither a demo definition (no "scenes") nor a valid mock script`},
		{"config", `{"recovery": {"max_retries": -1}, "scenes": [{"prompt": "Hi", "steps": []}]}`, "recovery.max_retries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".json")
			if err := os.WriteFile(path, []byte(c.script), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runDemoCmd(t, e, "--script", path, "--state-dir", dir)
			if code != 1 || !strings.Contains(stderr, path) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 1 naming %s and %q", code, stderr, path, c.want)
			}
		})
	}
	code, _, stderr := runDemoCmd(t, e, "--script", filepath.Join(dir, "missing.json"))
	if code != 1 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

// An agent that dies is reported, with its last log lines, as exit 1.
func TestDemo_AgentDies(t *testing.T) {
	dir := t.TempDir()
	child := filepath.Join(dir, "fake-rebound")
	if err := os.WriteFile(child, []byte("#!/bin/sh\necho 'fatal: something broke' >&2\nexit 3\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	e := env{getenv: func(k string) string {
		if k == "REBOUND_DEMO_CHILD" {
			return child
		}
		return ""
	}}
	code, _, stderr := runDemoCmd(t, e, "--fast", "--state-dir", dir)
	if code != 1 || !strings.Contains(stderr, "the agent exited unexpectedly") || !strings.Contains(stderr, "fatal: something broke") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// On a terminal the wait is a live line redrawn in place, in colour unless
// NO_COLOR is set.
func TestDemo_Terminal(t *testing.T) {
	skipShortDemo(t)
	old := demoIsTerminal
	demoIsTerminal = func(io.Writer) bool { return true }
	t.Cleanup(func() { demoIsTerminal = old })

	dir := t.TempDir()
	path := filepath.Join(dir, "mock.json")
	if err := os.WriteFile(path, []byte(`{"steps": [{"status": 429, "headers": {"retry-after-ms": "450"}}, {"text": "Done."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--script", path, "--state-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"\r\x1b[2K", "\x1b[33m  ↻ rate limited (429) · retrying in 0.", "rate limited (429) · retried after 0.", "\x1b[1;32mrebound:\x1b[0m Done.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, out)
		}
	}
	if strings.Count(out, "retrying in 0.") < 2 {
		t.Errorf("the countdown was not redrawn:\n%q", out)
	}

	code, out, _ = runDemoCmd(t, demoEnv(t, map[string]string{"NO_COLOR": "1"}), "--script", path, "--state-dir", dir)
	if code != 0 || strings.Contains(out, "\x1b[3") || strings.Contains(out, "\x1b[1") || !strings.Contains(out, "\r\x1b[2K") {
		t.Errorf("NO_COLOR: exit %d, want in-place updates without colour:\n%q", code, out)
	}
}

func TestDemo_Help(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := runEnv(t.Context(), []string{"demo", "--help"}, nil, &stdout, &stderr, env{}); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	for _, w := range []string{"Usage: rebound demo", "-fast", "-script", "-state-dir", "-timeout", "\"scenes\"", "cancel_after", "docs/mock-provider.md", "NO_COLOR"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("help lacks %q", w)
		}
	}
	stderr.Reset()
	runEnv(t.Context(), []string{"--help"}, nil, &stdout, &stderr, env{})
	if !helpListsCommand(stderr.String(), "demo") {
		t.Errorf("rebound --help does not list demo:\n%s", stderr.String())
	}
	if code := runEnv(t.Context(), []string{"demo", "extra"}, nil, &stdout, &stderr, env{}); code != 2 {
		t.Errorf("extra argument: exit %d, want 2", code)
	}

	stdout.Reset()
	if code := runEnv(t.Context(), []string{"demo", "--print-default"}, nil, &stdout, &stderr, env{}); code != 0 || stdout.String() != string(demoDefaultJSON) {
		t.Errorf("--print-default: exit %d, output differs from the embedded definition", code)
	}
}

// The built-in definition parses, every scene expects an outcome, and its
// config is one the agent accepts.
func TestDemo_DefaultDefinition(t *testing.T) {
	def, err := parseDemoDef(demoDefaultJSON)
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Scenes) != 6 {
		t.Errorf("%d scenes, want 6", len(def.Scenes))
	}
	for _, fast := range []bool{false, true} {
		if fast {
			def.scale(demoFastScale)
		}
		cfgText, err := def.configTOML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(path, cfgText, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(config.Flags{}, func(k string) string {
			return map[string]string{"REBOUND_CONFIG": path, "REBOUND_STATE_DIR": "/tmp/x"}[k]
		}, "")
		if err != nil {
			t.Fatalf("fast=%v: %v\n%s", fast, err, cfgText)
		}
		wantIdle := 2 * time.Second
		if fast {
			wantIdle = 200 * time.Millisecond
		}
		if got := time.Duration(cfg.Recovery.StreamIdleTimeout); got != wantIdle || cfg.Recovery.Jitter != 0 || cfg.Recovery.FallbackModel != "gpt-4o-mini" || cfg.Provider.Model != "gpt-4o" {
			t.Errorf("fast=%v: config %+v", fast, cfg.Recovery)
		}
	}
}

func TestDemo_ScaleStep(t *testing.T) {
	st := mockprovider.Step{Status: 429, Headers: map[string]string{"Retry-After": "2", "X-Request-Id": "r"}, Delay: "1s"}
	demoScaleStep(&st, 0.1)
	want := map[string]string{"retry-after-ms": "200", "X-Request-Id": "r"}
	if got, _ := json.Marshal(st.Headers); string(got) != mustJSONString(t, want) || st.Delay != "100ms" {
		t.Errorf("scaled step: headers %v, delay %q", st.Headers, st.Delay)
	}
	st = mockprovider.Step{Status: 503, Headers: map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}}
	demoScaleStep(&st, 0.1)
	if st.Headers["Retry-After"] == "" {
		t.Errorf("an HTTP-date Retry-After was changed: %v", st.Headers)
	}
	m := demoScaleMap(map[string]any{"initial_delay": "1s", "fallback_model": "m", "truncation": map[string]any{"max_continuations": 2}, "rules": []any{map[string]any{"delay": "2s"}}}, 0.1)
	if m["initial_delay"] != "100ms" || m["fallback_model"] != "m" || m["rules"].([]any)[0].(map[string]any)["delay"] != "200ms" {
		t.Errorf("scaled recovery: %v", m)
	}
}

func mustJSONString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The built-in demo at full speed, as `go run ./cmd/rebound demo` plays it:
// under 20 s. Slow, so only with REBOUND_DEMO_FULL=1.
func TestDemo_DefaultUnder20s(t *testing.T) {
	if os.Getenv("REBOUND_DEMO_FULL") == "" {
		t.Skip("set REBOUND_DEMO_FULL=1 to play the full-length demo")
	}
	e := demoEnv(t, nil)
	start := time.Now()
	code, out, stderr := runDemoCmd(t, e, "--state-dir", t.TempDir())
	took := time.Since(start)
	t.Logf("demo took %s\n%s", took, out)
	if code != 0 || took > 20*time.Second {
		t.Errorf("exit %d after %s\nstderr:\n%s", code, took, stderr)
	}
}

// --timeout ends the demo with exit 1, and the agent with it.
func TestDemo_Timeout(t *testing.T) {
	skipShortDemo(t)
	start := time.Now()
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--timeout", "1500ms", "--state-dir", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "did not finish within --timeout 1.5s") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s after a 1.5s timeout", took)
	}
	m := regexp.MustCompile(`\(pid (\d+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no agent pid in the output:\n%s", out)
	}
	pid, _ := strconv.Atoi(m[1])
	if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("the agent (pid %d) is still running", pid)
	}
}
