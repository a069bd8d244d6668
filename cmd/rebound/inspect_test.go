package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/internal/golden"
	"github.com/rebound-agent/rebound/session"
)

// inspectScenarios are the golden scenarios whose logs `rebound inspect` is
// pinned on: a plain turn, retries that recover, exhaustion, a cancel during
// a wait, a watchdog timeout, a two-turn session, a compaction, a fallback and
// a continued truncated reply; tool calls with permission answers, a cancel
// during a permission request, and a retry in a later step; usage with a
// cost over three turns, and an estimated one.
var inspectScenarios = []string{
	"plain_turn",
	"retry_429_then_drop",
	"retry_exhausted",
	"cancel_during_wait",
	"stall_idle_timeout",
	"session_load_replay",
	"cancel_mid_stream",
	"retry_429_retry_after",
	"overflow_compacted",
	"overload_fallback",
	"truncated_continued",
	"tool_permission_always",
	"tool_cancel_permission",
	"tool_multistep_429",
	"live_drop_continued",
	"live_exhausted_after_text",
	"live_crash_mid_stream",
	"usage_priced",
	"usage_estimated",
}

// TestInspect_Golden runs `rebound inspect` (text and --json) on the session
// log each golden scenario recorded (the "dir":"log" lines of
// snapshots/<scenario>.jsonl) and compares with
// testdata/inspect/<scenario>.{txt,json}. Rewrite them with
// `go test ./cmd/rebound -run TestInspect_Golden -update`.
func TestInspect_Golden(t *testing.T) {
	for _, name := range inspectScenarios {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeInspectLog(t, dir, name+".jsonl", snapshotEvents(t, name))
			for _, c := range []struct {
				ext  string
				args []string
			}{
				{".txt", []string{"inspect", path}},
				{".json", []string{"inspect", "--json", path}},
			} {
				code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), c.args...)
				if code != 0 || errOut != "" {
					t.Fatalf("%v: exit %d, stderr:\n%s", c.args, code, errOut)
				}
				// The log's directory varies from run to run.
				got := strings.ReplaceAll(out, dir, "$TMP")
				compareInspectGolden(t, filepath.Join("..", "..", "testdata", "inspect", name+c.ext), got)
			}
		})
	}
}

func TestInspect_InvalidLog(t *testing.T) {
	dir := t.TempDir()
	events := snapshotEvents(t, "retry_429_then_drop")
	// Break the retry chain: the second llm/retry claims to be retry 3.
	var lines []string
	for _, ev := range events {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	// Find the llm/retry of retry 2.
	at := slices.IndexFunc(lines, func(l string) bool {
		return strings.Contains(l, `"type":"llm/retry"`) && strings.Contains(l, `"retry":2,`)
	})
	if at < 0 {
		t.Fatalf("no llm/retry of retry 2 in the snapshot's log")
	}
	lines[at] = strings.Replace(lines[at], `"retry":2`, `"retry":3`, 1)
	path := filepath.Join(dir, "broken.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect", path)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	want := "rebound inspect: " + path + fmt.Sprintf(":%d:", at+1) + ` llm/retry 3 of chain "retry_1" after retry 1: retry numbers in a chain go up by one` + "\n"
	if errOut != want {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing for an invalid log", out)
	}
}

func TestInspect_TornLastLine(t *testing.T) {
	dir := t.TempDir()
	events := snapshotEvents(t, "plain_turn")
	path := writeInspectLog(t, dir, "torn.jsonl", events)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":10,"v":1,"time":"2000-01-01T00:00:01Z","type":"turn/sta`)
	f.Close()
	code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect", path)
	if code != 0 {
		t.Errorf("exit %d, want 0: the rest of the log is still shown", code)
	}
	if want := fmt.Sprintf("rebound inspect: warning: %s:%d: dropped a torn last line", path, len(events)+1); !strings.Contains(errOut, want) {
		t.Errorf("stderr = %q, want %q", errOut, want)
	}
	if !strings.Contains(out, "turn 1 ·") || !strings.Contains(out, "end_turn") {
		t.Errorf("stdout has no timeline:\n%s", out)
	}
}

// TestInspect_SessionID looks a session up by id in the state dir, named
// by --state-dir or by REBOUND_STATE_DIR, and says where it looked when the
// session is not there.
func TestInspect_SessionID(t *testing.T) {
	state := t.TempDir()
	path := writeInspectLog(t, filepath.Join(state, "sessions"), "sess_1.jsonl", snapshotEvents(t, "retry_exhausted"))

	code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect", "--state-dir", state, "sess_1")
	if code != 0 || !strings.Contains(out, "log     "+path+"\n") || !strings.Contains(out, "failed SERVER") {
		t.Errorf("--state-dir: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// Flags may follow the session too.
	code, out, _ = runInspectCmd(t, inspectEnv(t, map[string]string{"REBOUND_STATE_DIR": state}), "inspect", "sess_1", "--json")
	if code != 0 || !strings.Contains(out, `"log": "`+path+`"`) {
		t.Errorf("REBOUND_STATE_DIR, --json after the id: exit %d, stdout:\n%s", code, out)
	}

	code, out, errOut = runInspectCmd(t, inspectEnv(t, nil), "inspect", "--state-dir", state, "sess_2")
	want := filepath.Join(state, "sessions", "sess_2.jsonl")
	if code != 1 || out != "" || !strings.Contains(errOut, `no session "sess_2": looked for `+want) {
		t.Errorf("missing id: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runInspectCmd(t, inspectEnv(t, nil), "inspect", filepath.Join(state, "nope.jsonl"))
	if code != 1 || !strings.Contains(errOut, "no session log at "+filepath.Join(state, "nope.jsonl")) {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runInspectCmd(t, inspectEnv(t, nil), "inspect", "not an id")
	if code != 1 || !strings.Contains(errOut, "neither a log file") {
		t.Errorf("bad id: exit %d, stderr %q", code, errOut)
	}
}

func TestInspect_HTML(t *testing.T) {
	dir := t.TempDir()
	events := snapshotEvents(t, "retry_429_then_drop")
	// A provider's message is not to be trusted with markup.
	for i, ev := range events {
		events[i].Data = json.RawMessage(strings.ReplaceAll(string(ev.Data),
			"Rate limit reached (mock provider).", `<script>alert(\"pwned\")</script>`))
	}
	path := writeInspectLog(t, dir, "sess_1.jsonl", events)
	page := filepath.Join(dir, "timeline.html")
	code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect", "--html", page, path)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "turn 1 ·") {
		t.Errorf("stdout has no text timeline:\n%s", out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	if got := strings.Count(html, `<rect class="bar `); got != 3 {
		t.Errorf("%d attempt bars, want 3 (one per step)", got)
	}
	for _, want := range []string{`class="bar c-RATE_LIMIT"`, `class="bar c-TRANSPORT"`, `class="bar c-ok"`, "request mock-req-1",
		"&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(html, "<script") {
		t.Errorf("page contains an unescaped <script")
	}
}

func TestInspect_Usage(t *testing.T) {
	code, out, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect", "--help")
	if code != 0 || out != "" {
		t.Errorf("--help: exit %d, stdout %q", code, out)
	}
	for _, want := range []string{"Usage: rebound inspect", "SESSION", "-json", "-html FILE", "-state-dir", "<state dir>/sessions/<id>.jsonl"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("--help lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "-base-url") {
		t.Errorf("--help lists provider flags that do nothing here:\n%s", errOut)
	}
	if code, _, errOut := runInspectCmd(t, inspectEnv(t, nil), "inspect"); code != 2 || !strings.Contains(errOut, "which session?") || !strings.Contains(errOut, "'rebound sessions' lists the ids") {
		t.Errorf("no session: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ := runInspectCmd(t, inspectEnv(t, nil), "inspect", "a", "b"); code != 2 {
		t.Errorf("two sessions: exit %d, want 2", code)
	}
	// The top-level help lists the command.
	_, _, errOut = runInspectCmd(t, inspectEnv(t, nil), "--help")
	if !strings.Contains(errOut, "inspect") {
		t.Errorf("rebound --help does not list inspect:\n%s", errOut)
	}
}

func runInspectCmd(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runEnv(context.Background(), args, strings.NewReader(""), &out, &errOut, e)
	return code, out.String(), errOut.String()
}

// inspectEnv is an environment with only vars set and an empty home, so no
// config file or state dir of the machine running the tests is read.
func inspectEnv(t *testing.T, vars map[string]string) env {
	return env{getenv: func(k string) string { return vars[k] }, home: t.TempDir()}
}

// snapshotEvents returns the session log a golden scenario recorded.
func snapshotEvents(t *testing.T, scenario string) []session.Event {
	t.Helper()
	path := filepath.Join("..", "..", "snapshots", scenario+".jsonl")
	events := golden.SnapshotLog(t, path)
	if len(events) == 0 {
		t.Fatalf("%s has no session log lines", path)
	}
	return events
}

// writeInspectLog writes events as a session log file, one JSON line each,
// as session.Log does.
func writeInspectLog(t *testing.T, dir, name string, events []session.Event) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, ev := range events {
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func compareInspectGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := golden.Write(path, []byte(got)); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./cmd/rebound -run TestInspect_Golden -update` to create it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s\nrun `go test ./cmd/rebound -run TestInspect_Golden -update` and read the diff if the change is intended", path, diff)
	}
}
