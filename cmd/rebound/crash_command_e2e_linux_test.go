//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// TestE2E_CrashDuringCommandThenLoad kills the built binary (SIGKILL) while
// a command it started for the model runs: the tool call was made durable
// before the command started, the command dies with Rebound (it does not
// outlive the agent), and so does a process it put in a session of its own;
// a new process loading the session gives the call a result saying it was
// interrupted, so the next request is valid.
func TestE2E_CrashDuringCommandThenLoad(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{
		{Text: "Deploying.", ToolCalls: []mockprovider.ToolCall{{ID: "call_1", Name: "run_command",
			Arguments: `{"command":"setsid sh -c 'echo $$ > escaped; exec sleep 60' & while ! [ -s escaped ]; do sleep 0.01; done; echo $$ > started && exec sleep 60"}`}}},
		{Text: "It was interrupted; I will check before running it again."},
	}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	// A FIFO: reading it blocks until the command has started, with no polling.
	started := filepath.Join(project, "started")
	testkit.Mkfifo(t, started)
	state := filepath.Join(dir, "state")
	env := []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-e2e-secret", "REBOUND_STATE_DIR=" + state}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard against a hang, not a wait
	defer cancel()

	a := spawn(t, ctx, env...)
	sid := a.newSession(t, project)
	a.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"deploy"}]}}`)
	for {
		msg := a.next(t)
		if msg["method"] == "session/request_permission" {
			id, _ := json.Marshal(msg["id"])
			a.send(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`)
			break
		}
		if msg["id"] == 2.0 {
			t.Fatalf("the prompt was answered before permission was asked: %v", msg)
		}
	}
	pidText, err := os.ReadFile(started)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(pidText), &pid); err != nil || pid <= 0 {
		t.Fatalf("the command wrote %q, not its pid", pidText)
	}

	escapedText, err := os.ReadFile(filepath.Join(project, "escaped"))
	if err != nil {
		t.Fatal(err)
	}
	var escaped int
	if _, err := fmt.Sscan(string(escapedText), &escaped); err != nil || escaped <= 0 {
		t.Fatalf("the command's detached child wrote %q, not its pid", escapedText)
	}

	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	// Everything the command started dies with Rebound: wait for each exit
	// on a pidfd (they are not our children, so they cannot be waited for).
	for _, p := range []struct {
		what string
		pid  int
	}{{"the command", pid}, {"the command's detached child", escaped}} {
		pidfd, err := unix.PidfdOpen(p.pid, 0)
		if err == nil {
			fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
			n, perr := unix.Poll(fds, 10_000)
			for perr == unix.EINTR { // a signal to this process (the runtime's preemption, say), not an answer
				n, perr = unix.Poll(fds, 10_000)
			}
			unix.Close(pidfd)
			if perr != nil || n != 1 {
				syscall.Kill(p.pid, syscall.SIGKILL)
				t.Errorf("%s (pid %d) outlived the agent that was killed (poll: %d, %v)", p.what, p.pid, n, perr)
			}
		} else if !errors.Is(err, unix.ESRCH) {
			t.Fatalf("pidfd_open(%d): %v", p.pid, err)
		}
	}

	path := session.Path(state, sid)
	crashed, err := session.Load(path)
	if err != nil {
		t.Fatalf("load the log A left: %v", err)
	}
	if last := crashed.Events[len(crashed.Events)-1]; last.Type != session.TypePermission {
		t.Errorf("last event after the kill = %s %s, want the permission after tool/call", last.Type, last.Data)
	}
	if !slices.Equal(crashed.PendingToolCalls, []string{"call_1"}) {
		t.Errorf("pending tool calls after the kill = %q, want [call_1]", crashed.PendingToolCalls)
	}

	b := spawn(t, ctx, env...)
	notes := b.loadSession(t, sid, project)
	var toolStatus string
	for _, n := range notes {
		if kind, u := updateKind(n); kind == "tool_call" {
			toolStatus, _ = u["status"].(string)
		}
	}
	if toolStatus != "failed" {
		t.Errorf("replayed tool call status = %q, want failed (interrupted)", toolStatus)
	}
	b.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"did it deploy?"}]}}`)
	if _, resp := b.until(t, 2); resp["result"] == nil {
		t.Fatalf("prompt after the crash: %v", resp)
	}
	reqs := mock.Requests()
	if len(reqs) != 2 {
		t.Fatalf("provider requests = %d, want 2", len(reqs))
	}
	var toolMsg string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" && m.ToolCallID == "call_1" {
			toolMsg = m.Content
		}
	}
	if !strings.Contains(toolMsg, "Interrupted") {
		t.Errorf("the model's result for call_1 = %q, want it to say the call was interrupted", toolMsg)
	}
	b.stdin.Close()
	if err := b.cmd.Wait(); err != nil {
		t.Errorf("process B exit: %v\nstderr:\n%s", err, b.stderr)
	}
}
