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
func (a *Agent) childSecrets() proc.Secrets {
	if a.cfg.Secrets != nil {
		return a.cfg.Secrets()
	}
	return proc.Secrets{Names: []string{apiKeyEnv(a.cfg.APIKeyEnv)}}
}

// runInTerminal runs a command in a terminal of the editor's, shown live in
// the tool call. The terminal is released in every outcome; a timeout or a
// cancel kills the command first and keeps its output so far.
func (r *toolRunner) runInTerminal(ctx context.Context, call session.MessageToolCall, command, dir string, timeout time.Duration) (toolOutcome, error) {
	limit := int64(r.cfg.OutputLimit)
	self, _ := os.Executable() // "": the interpreter itself (shell.Interp.Terminal)
	tc := shell.Platform.Terminal(command, self)
	var env []acp.EnvVariable
	for _, v := range tc.Env {
		env = append(env, acp.EnvVariable{Name: v.Name, Value: v.Value})
	}
	created, err := r.ed.CreateTerminal(ctx, acp.CreateTerminalRequest{
		SessionID: r.sessionID, Command: tc.Program, Args: tc.Args, Env: env, Cwd: dir, OutputByteLimit: &limit,
	})
	if err != nil {
		if ctx.Err() != nil {
			return toolOutcome{status: session.ToolAborted, output: "The user cancelled the turn before the command started."}, errCancelledDuringTool
		}
		return failed("The editor could not start the command: %v", err), nil
	}
	term := acp.TerminalRequest{SessionID: r.sessionID, TerminalID: created.TerminalID}
	// Clean-up must happen even when the turn's context is cancelled, and
	// must not wait for an editor that never answers: a cancelled prompt
	// is answered within a few of these bounds whatever the editor does.
	bg := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), terminalCleanupTimeout)
	}
	defer func() {
		bg, stop := bg()
		defer stop()
		if err := r.ed.ReleaseTerminal(bg, term); err != nil {
			r.log.Debug().Err(err).Str("terminal", term.TerminalID).Msg("could not release the terminal")
		}
	}()
	live := []acp.ToolCallContent{acp.ContentTerminal(created.TerminalID)}
	r.inProgress(ctx, call.ID, live)

	waitCtx, stop := context.WithTimeout(ctx, timeout)
	exit, werr := r.ed.WaitForTerminalExit(waitCtx, term)
	stop()
	timedOut := werr != nil && ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded)
	cancelled := werr != nil && ctx.Err() != nil
	if werr != nil && (timedOut || cancelled) {
		bg, stop := bg()
		if err := r.ed.KillTerminal(bg, term); err != nil {
			r.log.Debug().Err(err).Str("terminal", term.TerminalID).Msg("could not kill the terminal")
		}
		stop()
	}
	octx, stop := bg()
	output, oerr := r.ed.TerminalOutput(octx, term)
	stop()
	if oerr == nil && output.ExitStatus != nil && werr != nil {
		exit, werr = *output.ExitStatus, nil
	}
	var b strings.Builder
	b.WriteString(output.Output)
	if output.Truncated {
		b.WriteString("\n[the beginning of the output was cut; only the end is shown]")
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	out := toolOutcome{status: session.ToolCompleted, live: live}
	switch {
	case cancelled:
		out.status = session.ToolAborted
		b.WriteString("[cancelled by the user; the command was killed; output so far above]")
	case timedOut:
		out.status = session.ToolFailed
		fmt.Fprintf(&b, "[timed out after %s; the command was killed]", timeout)
	case werr != nil:
		out.status = session.ToolFailed
		fmt.Fprintf(&b, "[the editor did not report how the command ended: %v]", werr)
	case exit.Signal != nil:
		out.status = session.ToolFailed
		fmt.Fprintf(&b, "[killed by %s]", *exit.Signal)
	case exit.ExitCode != nil:
		if *exit.ExitCode != 0 {
			out.status = session.ToolFailed
		}
		fmt.Fprintf(&b, "[exit code %d]", *exit.ExitCode)
	default:
		b.WriteString("[finished]")
	}
	if oerr != nil && !cancelled {
		fmt.Fprintf(&b, "\n[the output could not be read: %v]", oerr)
	}
	out.output = b.String()
	out.content = []acp.ToolCallContent{acp.ContentText(tools.CodeBlock("", out.output))}
	if out.status != session.ToolCompleted {
		// The user sees the terminal; say how it ended beside it, while the
		// terminal is still there to be shown (it is released next).
		status := out.output[strings.LastIndex(strings.TrimRight(out.output, "\n"), "\n")+1:]
		r.notify(ctx, acp.ToolCallUpdate{ToolCallID: call.ID,
			Content: append(slices.Clip(live), acp.ContentText(status))}.AsUpdate())
	}
	if cancelled {
		return out, errCancelledDuringTool
	}
	return out, nil
}
