package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/agent/tools/shell"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/session"
)

// runLocally runs a command on this machine, in its own process group, with
// the timeout and output cap, and without Rebound's credentials in its
// environment; a cancel kills what it started and keeps the output so far.
func (r *toolRunner) runLocally(ctx context.Context, command, dir string, timeout time.Duration) (toolOutcome, error) {
	res, err := shell.Run(ctx, shell.Options{Command: command, Dir: dir, Timeout: timeout, OutputLimit: r.cfg.OutputLimit,
		Secrets: r.secrets()})
	if err != nil {
		return failed("The command could not be started: %v", err), nil
	}
	out := toolOutcome{status: session.ToolCompleted, output: res.Summary()}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		out.status = session.ToolFailed
	}
	out.content = []acp.ToolCallContent{acp.ContentText(tools.CodeBlock("", out.output))}
	if res.Cancelled {
		out.status = session.ToolAborted
		return out, errCancelledDuringTool
	}
	return out, nil
}

// terminalCleanupTimeout bounds each request to the editor that cleans up
// after a command in its terminal (kill, output, release).
const terminalCleanupTimeout = 5 * time.Second

// childSecrets is what processes Rebound starts must not inherit (see
// Config.Secrets). A command in the editor's terminal has the editor's
// environment, not Rebound's.
func childSecrets(cfg *Config) proc.Secrets {
	if cfg.Secrets != nil {
		return cfg.Secrets()
	}
	return proc.Secrets{Names: []string{apiKeyEnv(cfg.APIKeyEnv)}}
}

// runInTerminal runs a command in a terminal of the editor's, shown live in
// the tool call. The terminal is released in every outcome; a timeout or a
// cancel kills the command first and keeps its output so far.
func (r *toolRunner) runInTerminal(ctx context.Context, call session.MessageToolCall, command, dir string, timeout time.Duration) (toolOutcome, error) {
	created, err := r.ed.CreateTerminal(ctx, r.terminalRequest(command, dir))
	if err != nil {
		if ctx.Err() != nil {
			return toolOutcome{status: session.ToolAborted, output: "The user cancelled the turn before the command started."}, errCancelledDuringTool
		}
		return failed("The editor could not start the command: %v", err), nil
	}
	term := acp.TerminalRequest{SessionID: r.sessionID, TerminalID: created.TerminalID}
	defer r.cleanUpTerminal(ctx, "release", term, r.ed.ReleaseTerminal)
	live := []acp.ToolCallContent{acp.ContentTerminal(created.TerminalID)}
	r.inProgress(ctx, call.ID, live)

	end := r.awaitTerminal(ctx, term, timeout)
	out := toolOutcome{live: live}
	out.status, out.output = end.report(timeout)
	out.content = []acp.ToolCallContent{acp.ContentText(tools.CodeBlock("", out.output))}
	if out.status != session.ToolCompleted {
		// The user sees the terminal; say how it ended beside it, while the
		// terminal is still there to be shown (it is released next).
		status := out.output[strings.LastIndex(strings.TrimRight(out.output, "\n"), "\n")+1:]
		r.notify(ctx, acp.ToolCallUpdate{ToolCallID: call.ID,
			Content: append(slices.Clip(live), acp.ContentText(status))}.AsUpdate())
	}
	if end.cancelled {
		return out, errCancelledDuringTool
	}
	return out, nil
}

// terminalRequest is terminal/create for a command run by the platform's
// shell (or Rebound's own interpreter) in dir, its output capped.
func (r *toolRunner) terminalRequest(command, dir string) acp.CreateTerminalRequest {
	limit := int64(r.cfg.OutputLimit)
	self, _ := os.Executable() // "": the interpreter itself (shell.Interp.Terminal)
	tc := shell.Platform.Terminal(command, self)
	var env []acp.EnvVariable
	for _, v := range tc.Env {
		env = append(env, acp.EnvVariable{Name: v.Name, Value: v.Value})
	}
	return acp.CreateTerminalRequest{
		SessionID: r.sessionID, Command: tc.Program, Args: tc.Args, Env: env, Cwd: dir, OutputByteLimit: &limit,
	}
}

// cleanUpTerminal makes one request that cleans up after a command (kill,
// release). It happens even when the turn's context is cancelled, and does
// not wait for an editor that never answers: a cancelled prompt is
// answered within a few of these bounds whatever the editor does.
func (r *toolRunner) cleanUpTerminal(ctx context.Context, what string, term acp.TerminalRequest, do func(context.Context, acp.TerminalRequest) error) {
	bg, stop := cleanupContext(ctx)
	defer stop()
	if err := do(bg, term); err != nil {
		r.log.Debug().Err(err).Str("terminal", term.TerminalID).Msg("could not " + what + " the terminal")
	}
}

// cleanupContext outlives ctx's cancel, bounded by terminalCleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), terminalCleanupTimeout)
}

// terminalEnd is how a command in the editor's terminal ended, as far as
// the editor told.
type terminalEnd struct {
	exit    acp.TerminalExitStatus
	waitErr error // the editor did not report the exit
	// timedOut and cancelled say why the wait ended early; the command
	// was killed then.
	timedOut, cancelled bool
	output              acp.TerminalOutputResponse
	outputErr           error
}

// awaitTerminal waits at most timeout for the command to exit, kills it
// after a timeout or a cancel, and reads its output, whose exit status
// stands in for a wait that did not end with one.
func (r *toolRunner) awaitTerminal(ctx context.Context, term acp.TerminalRequest, timeout time.Duration) terminalEnd {
	waitCtx, stop := context.WithTimeout(ctx, timeout)
	exit, werr := r.ed.WaitForTerminalExit(waitCtx, term)
	stop()
	end := terminalEnd{exit: exit, waitErr: werr,
		timedOut:  werr != nil && ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded),
		cancelled: werr != nil && ctx.Err() != nil}
	if end.timedOut || end.cancelled {
		r.cleanUpTerminal(ctx, "kill", term, r.ed.KillTerminal)
	}
	octx, stop := cleanupContext(ctx)
	end.output, end.outputErr = r.ed.TerminalOutput(octx, term)
	stop()
	if end.outputErr == nil && end.output.ExitStatus != nil && end.waitErr != nil {
		end.exit, end.waitErr = *end.output.ExitStatus, nil
	}
	return end
}

// report is the call's status and what the model reads: the output (with
// a word where its beginning was cut), then a line saying how it ended.
func (e terminalEnd) report(timeout time.Duration) (status, text string) {
	var b strings.Builder
	b.WriteString(e.output.Output)
	if e.output.Truncated {
		b.WriteString("\n[the beginning of the output was cut; only the end is shown]")
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	status, ending := e.ending(timeout)
	b.WriteString(ending)
	if e.outputErr != nil && !e.cancelled {
		fmt.Fprintf(&b, "\n[the output could not be read: %v]", e.outputErr)
	}
	return status, b.String()
}

// ending is the call's status and the line that says how the command ended.
func (e terminalEnd) ending(timeout time.Duration) (status, line string) {
	switch {
	case e.cancelled:
		return session.ToolAborted, "[cancelled by the user; the command was killed; output so far above]"
	case e.timedOut:
		return session.ToolFailed, fmt.Sprintf("[timed out after %s; the command was killed]", timeout)
	case e.waitErr != nil:
		return session.ToolFailed, fmt.Sprintf("[the editor did not report how the command ended: %v]", e.waitErr)
	case e.exit.Signal != nil:
		return session.ToolFailed, fmt.Sprintf("[killed by %s]", *e.exit.Signal)
	case e.exit.ExitCode == nil:
		return session.ToolCompleted, "[finished]"
	case *e.exit.ExitCode != 0:
		return session.ToolFailed, fmt.Sprintf("[exit code %d]", *e.exit.ExitCode)
	}
	return session.ToolCompleted, fmt.Sprintf("[exit code %d]", *e.exit.ExitCode)
}
