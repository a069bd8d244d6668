package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/demo"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// The demo itself is tested in internal/demo; these tests cover its
// subcommand: the flags, the help and the exit codes.

// demoEnv points the demo's agent at the built binary.
func demoEnv(t *testing.T, vars map[string]string) env {
	t.Helper()
	return env{getenv: testkit.DemoGetenv(t, vars), home: t.TempDir()}
}

func runDemoCmd(t *testing.T, e env, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute) // a guard, not a wait
	defer cancel()
	var out, errb bytes.Buffer
	code = runEnv(ctx, append([]string{"demo"}, args...), strings.NewReader(""), &out, &errb, e)
	return code, out.String(), errb.String()
}

func skipShortDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
}

func TestDemo_Help(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := runEnv(t.Context(), []string{"demo", "--help"}, nil, &stdout, &stderr, env{}); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	for _, w := range []string{"Usage: rebound demo", "-fast", "-streaming", "live", "held", "-script", "-state-dir", "-timeout", "\"scenes\"", "\"project\"", "tool_calls", "cancel_after", "docs/mock-provider.md", "NO_COLOR"} {
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
	stderr.Reset()
	if code := runEnv(t.Context(), []string{"demo", "--streaming", "fast"}, nil, &stdout, &stderr, env{}); code != 2 || !strings.Contains(stderr.String(), `--streaming: want live or held, got "fast"`) {
		t.Errorf("--streaming fast: exit %d, want 2; stderr:\n%s", code, stderr.String())
	}

	stdout.Reset()
	if code := runEnv(t.Context(), []string{"demo", "--print-default"}, nil, &stdout, &stderr, env{}); code != 0 || stdout.String() != string(demo.DefaultDefinition()) {
		t.Errorf("--print-default: exit %d, output differs from the embedded definition", code)
	}
}

// --timeout ends the demo with exit 1, and the agent with it.
func TestDemo_Timeout(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
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

// Every flag reaches the demo: --fast, --streaming, --script and
// --state-dir show in its header and summary, which points at `rebound
// inspect`.
func TestDemo_Flags(t *testing.T) {
	skipShortDemo(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "hello.json")
	if err := os.WriteFile(script, []byte(`{"steps": [{"status": 429, "headers": {"Retry-After": "1"}}, {"text": "Hi."}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDemoCmd(t, demoEnv(t, nil), "--fast", "--streaming", "held", "--script", script, "--state-dir", dir, "--timeout", "1m")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"\n  streaming held: ",
		"\n  waits     scaled by 0.1 (--fast)\n",
		"\n  script    " + script + "\n",
		"↻ rate limited (429) · retrying in 0.1s · retry 1 of 2\n",
		"\n  session log            " + filepath.Join(dir, "sessions") + string(filepath.Separator),
		" shows its timeline\n",
		// The command run, not an uninstalled "rebound"; the demo's own state dir.
		"\n                         " + os.Args[0] + " inspect " + filepath.Join(dir, "sessions") + string(filepath.Separator),
		"\n                         " + os.Args[0] + " sessions --state-dir " + dir + " lists the sessions there\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
