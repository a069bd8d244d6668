//go:build unix

package main

import (
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/session"
)

// These tests signal the built binary as an editor (or the OS) would and
// check that it stops cleanly: exit status 0, an info line, no error line,
// and within a bound even when nobody reads its stdout. The waits are real
// (real processes); each is bounded by the process exiting, and the guards
// are a few seconds.

// exitWithin waits for p to exit, at most d, and returns its exit status
// and how long it took; on timeout it kills p and fails the test.
func exitWithin(t *testing.T, cmd *exec.Cmd, stderr *strings.Builder, d time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(start)
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, took
		case errors.As(err, &ee) && ee.ExitCode() >= 0:
			return ee.ExitCode(), took
		default:
			t.Fatalf("rebound: %v\nstderr:\n%s", err, stderr)
		}
	case <-time.After(d):
		cmd.Process.Kill()
		<-done
		t.Fatalf("rebound did not exit within %v of the signal\nstderr:\n%s", d, stderr)
	}
	return 0, 0
}

// checkCleanStop checks the log of a clean stop: the info line saying why,
// and no error.
func checkCleanStop(t *testing.T, stderr, reason string) {
	t.Helper()
	if !strings.Contains(stderr, `"level":"info"`) || !strings.Contains(stderr, `"message":"stopped"`) || !strings.Contains(stderr, reason) {
		t.Errorf("stderr has no info line saying it stopped (%s):\n%s", reason, stderr)
	}
	if strings.Contains(stderr, `"level":"error"`) {
		t.Errorf("stderr has an error line:\n%s", stderr)
	}
}

func TestE2E_SignalWhileIdle(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tt := range []struct {
		sig    syscall.Signal
		reason string
	}{
		{syscall.SIGTERM, "terminated signal received"},
		{syscall.SIGINT, "interrupt signal received"},
		{syscall.SIGHUP, "hangup signal received"}, // Emacs, closing
	} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a guard, not a wait
			defer cancel()
			p := spawn(t, ctx, "REBOUND_STATE_DIR="+t.TempDir())
			p.newSession(t, t.TempDir())
			if err := p.cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			code, took := exitWithin(t, p.cmd, p.stderr, 5*time.Second)
			if code != 0 {
				t.Errorf("exit status %d after %v, want 0\nstderr:\n%s", code, took, p.stderr)
			}
			checkCleanStop(t, p.stderr.String(), tt.reason)
		})
	}
}

// A turn running when SIGTERM arrives (or SIGHUP: Emacs sends it when it
// exits) is answered as cancelled, then Rebound exits 0.
func TestE2E_SignalDuringPrompt(t *testing.T) {
	t.Parallel() // a rebound process of its own; it waits on it, not on the CPU
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tt := range []struct {
		sig    syscall.Signal
		reason string
	}{
		{syscall.SIGTERM, "terminated signal received"},
		{syscall.SIGHUP, "hangup signal received"},
	} {
		t.Run(tt.sig.String(), func(t *testing.T) { signalDuringPrompt(t, tt.sig, tt.reason) })
	}
}

func signalDuringPrompt(t *testing.T, sig syscall.Signal, reason string) {
	stall := 1
	mock := mockprovider.New(&mockprovider.Script{Steps: []mockprovider.Step{{Text: "never finished", Chunks: 3, StallAfter: &stall}}})
	srv := httptest.NewServer(mock)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	state := t.TempDir()
	p := spawn(t, ctx, "OPENAI_BASE_URL="+srv.URL+"/v1", "OPENAI_API_KEY=sk-e2e", "REBOUND_STATE_DIR="+state, "REBOUND_MODEL=mock-model")
	sid := p.newSession(t, t.TempDir())
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hi"}]}}`)
	for { // the first chunk is shown: the turn runs, and its stream stalls
		msg := p.next(t)
		if msg["id"] == 2.0 {
			t.Fatalf("prompt answered before the signal: %v", msg)
		}
		if kind, _ := updateKind(msg); kind == "agent_message_chunk" {
			break
		}
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_, resp := p.until(t, 2)
	if got := resp["result"]; got == nil || got.(map[string]any)["stopReason"] != "cancelled" {
		t.Errorf("prompt answered %v, want stopReason cancelled", resp)
	}
	code, took := exitWithin(t, p.cmd, p.stderr, 5*time.Second)
	if code != 0 {
		t.Errorf("exit status %d after %v, want 0\nstderr:\n%s", code, took, p.stderr)
	}
	checkCleanStop(t, p.stderr.String(), reason)
	ld, err := session.Load(session.Path(state, sid))
	if err != nil || ld.OpenTurn != 0 {
		t.Errorf("the session log after %v: %v, open turn %d; want the turn closed", sig, err, ld.OpenTurn)
	}
}
