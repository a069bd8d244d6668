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
	c, err := startCommand(opts, limit)
	if err != nil {
		return Result{}, err
	}
	defer c.pr.Close()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-c.waitDone:
		// Mirror a terminal closing when its shell exits: the kernel hangs
		// up the foreground group there, so plain background jobs die while
		// nohup'd ones survive.
		c.p.Hangup()
	case <-timer.C:
		res.TimedOut = true
		c.stop(timeout)
	case <-ctx.Done():
		res.Cancelled = true
		c.stop(timeout)
	}
	c.drain()

	res.Duration = time.Since(c.start)
	res.ExitCode, res.Signal = proc.ExitStatus(c.state)
	res.Output, res.Truncated = c.out.result()
	return res, nil
}

// running is a started command: its process, the read end of its output
// pipe, and the goroutines that read the pipe and wait for the process.
type running struct {
	p        *proc.Process
	pr       *os.File
	start    time.Time
	out      *capture
	readDone chan struct{} // closed at the pipe's end
	waitDone chan struct{} // closed once the main process has exited
	state    *os.ProcessState
	drained  bool // readDone was seen closed
}

// startCommand starts opts.Command with its output kept in a capture of
// limit bytes.
func startCommand(opts Options, limit int) (*running, error) {
	// One pipe for both streams keeps stdout and stderr interleaved as
	// written. Passing *os.File (not an io.Writer) means os/exec starts no copy
	// goroutine of its own, so Wait returns as soon as the main process exits
	// and Run decides alone how long to keep reading.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("shell: output pipe: %w", err)
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
		return nil, fmt.Errorf("shell: start command: %w", err)
	}
	// The child holds its own copy; ours must go or the reader never sees EOF.
	pw.Close()
	c := &running{p: p, pr: pr, start: start, out: newCapture(limit),
		readDone: make(chan struct{}), waitDone: make(chan struct{})}
	go c.read()
	go c.wait()
	return c, nil
}

// read copies the output pipe into the capture until the pipe's end.
func (c *running) read() {
	defer close(c.readDone)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.pr.Read(buf)
		c.out.write(buf[:n])
		if err != nil {
			return
		}
	}
}

// wait waits for the main process and keeps its state.
func (c *running) wait() {
	defer close(c.waitDone)
	c.state, _ = c.p.Wait() // the outcome is read from the state
}

// stop ends a command that timed out or was cancelled: its group is asked
// to terminate and given KillGrace (at most the timeout) to exit and close
// the output, then everything left is killed. It returns once the main
// process has exited.
func (c *running) stop(timeout time.Duration) {
	c.p.Terminate()
	grace := time.NewTimer(min(KillGrace, timeout))
	waitDone, readDone := c.waitDone, c.readDone // nil once seen closed
wait:
	for waitDone != nil || readDone != nil {
		select {
		case <-waitDone:
			waitDone = nil
		case <-readDone:
			readDone, c.drained = nil, true
		case <-grace.C:
			break wait
		}
	}
	grace.Stop()
	c.p.Kill()
	if waitDone != nil {
		<-waitDone
	}
}

// drain waits, a bounded time, for the output pipe's end once the main
// process has exited.
func (c *running) drain() {
	if c.drained || waitClosed(c.readDone, drainDelay) {
		return
	}
	// Whatever still holds the pipe ignored the hangup (or outlived
	// SIGKILL's delivery so far): finish it.
	c.p.Kill()
	if waitClosed(c.readDone, drainDelay) {
		return
	}
	// Only a process that escaped the kill can still hold the pipe; stop
	// reading rather than wait for it.
	if c.pr.SetReadDeadline(time.Now()) != nil {
		c.pr.Close()
	}
	<-c.readDone
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
