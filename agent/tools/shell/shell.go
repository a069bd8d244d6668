// Package shell runs one shell command for the agent's run_command tool when
// the editor offers no terminal of its own.
//
// The command gets what an editor terminal would give it (/bin/sh -c, or
// cmd.exe /c on Windows: see Interp; the
// session's working directory and Rebound's environment without its
// credentials, combined stdout and stderr). It is started with proc, which
// runs it in its own process group and, on Linux, under a reaper: when it
// times out or is cancelled the group is asked to terminate, then everything
// it started is killed; when it finishes, so is everything it left running,
// setsid'd and double-forked processes included, so nothing outlives it or
// keeps Run waiting. Output is kept in bounded memory whatever the command
// prints.
package shell

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/internal/proc"
)

const (
	// DefaultTimeout applies when Options.Timeout is zero.
	DefaultTimeout = 2 * time.Minute
	// DefaultOutputLimit applies when Options.OutputLimit is zero.
	DefaultOutputLimit = 64 << 10
	// KillGrace is how long the process group has between SIGTERM and SIGKILL
	// on timeout or cancellation. It is capped at the timeout so a short
	// timeout is not stretched by a long grace.
	KillGrace = 2 * time.Second
)

// drainDelay bounds how long Run keeps reading output after the command's
// main process has exited. Only a process that still holds the output pipe
// (a background child that ignored the hangup, or one that left the process
// group) can make Run wait this long.
const drainDelay = 250 * time.Millisecond

// Options describes one command.
type Options struct {
	Command     string        // run as: /bin/sh -c Command (Platform)
	Dir         string        // working directory (already validated by the caller)
	Env         []string      // nil = Rebound's environment (os.Environ) without Secrets
	Secrets     proc.Secrets  // what an inherited environment must not carry
	Timeout     time.Duration // 0 = DefaultTimeout
	OutputLimit int           // bytes of combined stdout+stderr kept; 0 = DefaultOutputLimit
}

// Result is what happened to the command.
type Result struct {
	// Output is the combined stdout and stderr, valid UTF-8 (invalid bytes are
	// replaced with U+FFFD). When the command printed more than the limit, the
	// head and the tail are kept with a marker line between them saying how
	// many bytes were omitted.
	Output    string
	Truncated bool
	ExitCode  *int   // nil when killed by a signal or never exited normally
	Signal    string // e.g. "SIGKILL" when the main process was killed by a signal
	TimedOut  bool
	Cancelled bool          // ctx was cancelled
	Timeout   time.Duration // the timeout that applied, for Summary
	Duration  time.Duration
}

// Run runs opts.Command and waits for it, its output, and the clean-up of its
// process group. The error is non-nil only when the command could not be
// started at all; a failing, timed-out or cancelled command is a Result.
//
// Run returns only after every goroutine it started has finished, so it is
// safe to call concurrently and leaks nothing.
func Run(ctx context.Context, opts Options) (Result, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	limit := opts.OutputLimit
	if limit <= 0 {
		limit = DefaultOutputLimit
	}
	res := Result{Timeout: timeout}
	if ctx.Err() != nil {
		// Starting a command only to kill it would still run its first
		// instants of side effects.
		res.Cancelled = true
		return res, nil
	}

	// One pipe for both streams keeps stdout and stderr interleaved as
	// written. Passing *os.File (not an io.Writer) means os/exec starts no copy
	// goroutine of its own, so Wait returns as soon as the main process exits
	// and Run decides alone how long to keep reading.
	pr, pw, err := os.Pipe()
	if err != nil {
		return Result{}, fmt.Errorf("shell: output pipe: %w", err)
	}
	env := opts.Env
	if env == nil {
		env = proc.Environ(opts.Secrets, opts.Dir)
	}
	start := time.Now()
	name, args, cmdLine := Platform.cmd(opts.Command)
	p, err := proc.Start(proc.Cmd{
		Name: name, Args: args, CmdLine: cmdLine, Dir: opts.Dir, Env: env,
		// No stdin: the null device, so a command waiting for input must
		// not hang.
		Stdout: pw, Stderr: pw,
	})
	if err != nil {
		pr.Close()
		pw.Close()
		return Result{}, fmt.Errorf("shell: start command: %w", err)
	}
	// The child holds its own copy; ours must go or the reader never sees EOF.
	pw.Close()
	defer pr.Close()

	out := newCapture(limit)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		buf := make([]byte, 32<<10)
		for {
			n, err := pr.Read(buf)
			out.write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	var state *os.ProcessState
	waitDone := make(chan struct{})
	go func() {
		defer close(waitDone)
		state, _ = p.Wait() // the outcome is read from the state
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	exited, drained := false, false
	select {
	case <-waitDone:
		exited = true
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}

	if exited {
		// Mirror a terminal closing when its shell exits: the kernel hangs
		// up the foreground group there, so plain background jobs die while
		// nohup'd ones survive.
		p.Hangup()
	} else {
		p.Terminate()
		grace := time.NewTimer(min(KillGrace, timeout))
	wait:
		for !exited || !drained {
			select {
			case <-waitDone:
				exited, waitDone = true, nil
			case <-readDone:
				drained, readDone = true, nil
			case <-grace.C:
				break wait
			}
		}
		grace.Stop()
		p.Kill()
		if !exited {
			<-waitDone
		}
	}

	if !drained {
		if !waitClosed(readDone, drainDelay) {
			// Whatever still holds the pipe ignored the hangup (or outlived
			// SIGKILL's delivery so far): finish it.
			p.Kill()
			if !waitClosed(readDone, drainDelay) {
				// Only a process that escaped the kill can still hold the
				// pipe; stop reading rather than wait for it.
				if pr.SetReadDeadline(time.Now()) != nil {
					pr.Close()
				}
				<-readDone
			}
		}
	}

	res.Duration = time.Since(start)
	res.ExitCode, res.Signal = proc.ExitStatus(state)
	res.Output, res.Truncated = out.result()
	return res, nil
}

// waitClosed reports whether ch closed within d. A nil ch counts as closed.
func waitClosed(ch <-chan struct{}, d time.Duration) bool {
	if ch == nil {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Summary is the text the model reads: the output followed by one status line.
func (r Result) Summary() string {
	var b strings.Builder
	if r.Output == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(r.Output)
		if !strings.HasSuffix(r.Output, "\n") {
			b.WriteByte('\n')
		}
	}
	switch {
	case r.TimedOut && r.Timeout > 0:
		fmt.Fprintf(&b, "[timed out after %s; the command and its children were killed]", r.Timeout)
	case r.TimedOut:
		b.WriteString("[timed out; the command and its children were killed]")
	case r.Cancelled && r.Output != "":
		b.WriteString("[cancelled by the user; output so far above]")
	case r.Cancelled:
		b.WriteString("[cancelled by the user]")
	case r.ExitCode != nil:
		fmt.Fprintf(&b, "[exit code %d]", *r.ExitCode)
	case r.Signal != "":
		fmt.Fprintf(&b, "[killed by signal %s]", r.Signal)
	default:
		b.WriteString("[exit status unknown]")
	}
	return b.String()
}
