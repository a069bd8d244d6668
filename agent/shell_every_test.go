package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// scriptedTerminal is an editor's terminal that answers as told and
// writes down every call with the time left on its context.
type scriptedTerminal struct {
	acp.Client
	createErr                      error
	cancelOnCreate, cancelOnWait   bool
	cancel                         context.CancelFunc
	wait                           string // "exit", "error", "block"
	exit                           acp.TerminalExitStatus
	output                         acp.TerminalOutputResponse
	outputErr, killErr, releaseErr error
	calls                          []string
}

func (s *scriptedTerminal) note(ctx context.Context, what string) {
	d, ok := ctx.Deadline()
	s.calls = append(s.calls, fmt.Sprintf("%s deadline=%v left=%s err=%v", what, ok, time.Until(d), ctx.Err()))
}

func (s *scriptedTerminal) CreateTerminal(ctx context.Context, req acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	limit := *req.OutputByteLimit
	req.OutputByteLimit = nil
	s.note(ctx, fmt.Sprintf("create %+v limit=%d", req, limit))
	if s.cancelOnCreate {
		s.cancel()
	}
	if s.createErr != nil {
		return acp.CreateTerminalResponse{}, s.createErr
	}
	return acp.CreateTerminalResponse{TerminalID: "term_1"}, nil
}

func (s *scriptedTerminal) WaitForTerminalExit(ctx context.Context, req acp.TerminalRequest) (acp.TerminalExitStatus, error) {
	s.note(ctx, fmt.Sprintf("wait %+v", req))
	if s.cancelOnWait {
		s.cancel()
	}
	switch s.wait {
	case "exit":
		return s.exit, nil
	case "error":
		return acp.TerminalExitStatus{}, errors.New("wait failed")
	}
	<-ctx.Done()
	return acp.TerminalExitStatus{}, ctx.Err()
}

func (s *scriptedTerminal) KillTerminal(ctx context.Context, req acp.TerminalRequest) error {
	s.note(ctx, fmt.Sprintf("kill %+v", req))
	return s.killErr
}

func (s *scriptedTerminal) TerminalOutput(ctx context.Context, req acp.TerminalRequest) (acp.TerminalOutputResponse, error) {
	s.note(ctx, fmt.Sprintf("output %+v", req))
	return s.output, s.outputErr
}

func (s *scriptedTerminal) ReleaseTerminal(ctx context.Context, req acp.TerminalRequest) error {
	s.note(ctx, fmt.Sprintf("release %+v", req))
	return s.releaseErr
}

// terminalRun is what one runInTerminal did: its result, the terminal
// calls, the updates sent and what was logged.
type terminalRun struct {
	out     toolOutcome
	err     error
	calls   []string
	updates []acp.SessionUpdate
	logged  string
}

// TestRunInTerminal_EveryCase runs a command in a scripted terminal in
// every way it can end (an exit code, a signal, a failed or endless wait,
// a timeout, a cancel at the start or while it runs, output that fails, is
// cut, or carries the exit status) and checks what must hold in each: the
// terminal is released, killed exactly when the wait was cut short,
// cleaned up under its own bound even after a cancel, and the result says
// how the command ended.
func TestRunInTerminal_EveryCase(t *testing.T) {
	zero, three, sig := 0, 3, "SIGTERM"
	exits := []acp.TerminalExitStatus{{}, {ExitCode: &zero}, {ExitCode: &three}, {Signal: &sig}, {ExitCode: &three, Signal: &sig}}
	outputs := []acp.TerminalOutputResponse{{}, {Output: "hello"}, {Output: "hello\n", Truncated: true}, {Truncated: true}}
	for _, o := range slices.Clone(outputs) {
		for _, e := range exits {
			o.ExitStatus = &e
			outputs = append(outputs, o)
		}
	}
	var cases []scriptedTerminal
	for _, createErr := range []error{nil, errors.New("no terminal")} {
		for _, cancelOnCreate := range []bool{false, true} {
			if createErr != nil {
				cases = append(cases, scriptedTerminal{createErr: createErr, cancelOnCreate: cancelOnCreate})
				continue
			}
			for _, wait := range []string{"exit", "error", "block"} {
				for _, cancelOnWait := range []bool{false, true} {
					for _, exit := range exits {
						for _, output := range outputs {
							for _, outputErr := range []error{nil, errors.New("output failed")} {
								for _, killErr := range []error{nil, errors.New("kill failed")} {
									cases = append(cases, scriptedTerminal{cancelOnCreate: cancelOnCreate, wait: wait, cancelOnWait: cancelOnWait,
										exit: exit, output: output, outputErr: outputErr, killErr: killErr, releaseErr: killErr})
								}
							}
						}
					}
				}
			}
		}
	}
	run := func(ed scriptedTerminal) (r terminalRun) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			ed.cancel = cancel
			var logged strings.Builder
			log := zerolog.New(&logged)
			tr := &toolRunner{ed: &ed, sessionID: "sess_1", cfg: Tools{OutputLimit: 4096}, log: &log,
				notify: func(_ context.Context, u acp.SessionUpdate) { r.updates = append(r.updates, u) }}
			r.out, r.err = tr.runInTerminal(ctx, session.MessageToolCall{ID: "call_1"}, "make test", "/w", 7*time.Second)
			r.calls, r.logged = ed.calls, logged.String()
		})
		return r
	}
	for _, c := range cases {
		checkTerminalRun(t, c, run(c))
	}
	t.Logf("%d cases", len(cases))
}

func checkTerminalRun(t *testing.T, c scriptedTerminal, r terminalRun) {
	t.Helper()
	where := fmt.Sprintf("%+v:\n%+v", c, r)
	if c.createErr != nil {
		if len(r.calls) != 1 || r.out.status == session.ToolCompleted || errors.Is(r.err, errCancelledDuringTool) != c.cancelOnCreate {
			t.Fatalf("a terminal that was not created: only create, a failed or aborted call, cancelled only by a cancel; %s", where)
		}
		return
	}
	if last := r.calls[len(r.calls)-1]; !strings.HasPrefix(last, "release ") {
		t.Fatalf("the terminal is not released last; %s", where)
	}
	// A wait that ends with an exit status is not cut short, whatever
	// happened meanwhile; a failed wait is, when the turn was cancelled.
	cancelled := (c.cancelOnCreate || c.cancelOnWait) && c.wait != "exit"
	cutShort := cancelled || c.wait == "block"
	killed := slices.ContainsFunc(r.calls, func(s string) bool { return strings.HasPrefix(s, "kill ") })
	if killed != cutShort {
		t.Fatalf("killed %v, want %v (only a timeout or a cancel kills); %s", killed, cutShort, where)
	}
	for _, call := range r.calls[2:] { // kill, output, release
		if !strings.Contains(call, "deadline=true left="+terminalCleanupTimeout.String()+" err=<nil>") {
			t.Fatalf("clean-up %q is not bounded on its own, or was cancelled with the turn; %s", call, where)
		}
	}
	if (r.out.status == session.ToolAborted) != cancelled || errors.Is(r.err, errCancelledDuringTool) != cancelled {
		t.Fatalf("aborted and errCancelledDuringTool exactly when the user cancelled; %s", where)
	}
	if !strings.HasPrefix(r.out.output, c.output.Output) || !strings.Contains(r.out.output, "]") {
		t.Fatalf("the result is not the output then how it ended; %s", where)
	}
	if (r.out.status != session.ToolCompleted) != (len(r.updates) == 2) {
		t.Fatalf("a command that did not complete is shown how it ended beside its terminal, and only then; %s", where)
	}
}
