package main

import (
	"bufio"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// stuckRebound starts the built binary, runs a prompt whose reply is 6 MiB
// of updates (more than stdout's pipe and the 4 MiB the stream queues), and
// stops reading stdout after session/new: it returns once stdout's pipe is
// full, with the turn blocked writing. Linux only: it watches the pipe's
// fill level with TIOCINQ.
func stuckRebound(t *testing.T) (cmd *exec.Cmd, stderr *strings.Builder, stateDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	text := strings.Repeat("0123456789abcdef", 6<<20/16)
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: text, Chunks: 6 << 10}}})
	srv := httptest.NewServer(mock)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard, not a wait
	t.Cleanup(cancel)

	stateDir = t.TempDir()
	cmd = exec.CommandContext(ctx, testkit.ReboundBinary(t))
	home := t.TempDir()
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + home, "XDG_STATE_HOME=" + home,
		"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e", "REBOUND_STATE_DIR=" + stateDir, "REBOUND_MODEL=mock-model"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	// stdout is an *os.File pipe, so that its fill level can be watched.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outR.Close() })
	cmd.Stdout = outW
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	p := &agentProc{cmd: cmd, stdin: stdin, stderr: stderr}
	p.lines = bufio.NewScanner(outR)
	p.lines.Buffer(nil, 32<<20)
	sid := p.newSession(t, t.TempDir())
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi"}]}}`)

	// From here nothing reads stdout. The pipe is full when its buffered
	// bytes stop growing.
	fd := int(outR.Fd())
	last, still := -1, 0
	for deadline := time.Now().Add(20 * time.Second); still < 10; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stdout's pipe did not fill (%d bytes buffered)\nstderr:\n%s", last, stderr)
		}
		n, err := unix.IoctlGetInt(fd, unix.TIOCINQ)
		if err != nil {
			t.Fatalf("TIOCINQ: %v", err)
		}
		if n == last && n >= 32<<10 {
			still++
		} else {
			last, still = n, 0
		}
	}
	t.Logf("stdout's pipe holds %d bytes nobody reads", last)
	return cmd, stderr, stateDir
}

// An editor that stops reading stdout must not keep Rebound alive: with
// stdout's pipe full and megabytes of updates waiting, SIGTERM still ends
// it within a few seconds (the shutdown's bound, 2 s, plus 1 s of grace),
// with status 0, and the session log is closed valid. The output nobody
// read is dropped and logged as a warning: the editor asked Rebound to
// stop and the session log holds the turn, so that is not an error.
func TestE2E_SignalWhileStdoutIsNotRead(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	cmd, stderr, stateDir := stuckRebound(t)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := exitWithin(t, cmd, stderr, 10*time.Second)
	t.Logf("exited %d, %v after SIGTERM", code, took)
	if code != 0 {
		t.Errorf("exit status %d, want 0\nstderr:\n%s", code, stderr)
	}
	checkCleanStop(t, stderr.String(), "terminated signal received")
	if !strings.Contains(stderr.String(), "output lost at shutdown") {
		t.Errorf("stderr does not say output was lost:\n%s", stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(stateDir, "sessions", "*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("session logs = %v, want one", logs)
	}
	ld, err := session.Load(logs[0])
	if err != nil {
		t.Fatalf("session log after SIGTERM: %v", err)
	}
	if ld.OpenTurn != 0 || ld.TornBytes != 0 {
		t.Errorf("session log after SIGTERM: turn %d left open, %d torn bytes; want the turn closed", ld.OpenTurn, ld.TornBytes)
	}
}

// Once the first signal has arrived, a second one kills at once: the
// default action is back.
func TestE2E_SecondSignalKills(t *testing.T) {
	cmd, stderr, _ := stuckRebound(t)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // well inside the 3 s a clean stop takes here
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("exit %v, want killed by SIGTERM\nstderr:\n%s", err, stderr)
		}
	case <-time.After(time.Second):
		cmd.Process.Kill()
		<-done
		t.Errorf("still running 1s after the second SIGTERM, want killed at once\nstderr:\n%s", stderr)
	}
}
