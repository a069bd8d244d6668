// Package proc starts the processes Rebound runs for the model (run_command's
// local commands, stdio MCP servers) so that nothing they start outlives
// them, and gives them an environment without Rebound's credentials.
//
// On Linux a command runs under a reaper: Rebound's own binary, re-executed
// in a mode of its own (see reaper_linux.go), which makes itself a child
// subreaper, runs the command in a process group, forwards the signals
// Process sends, and when the command exits, when Kill is called or when
// Rebound dies, kills every process left below it (those that called setsid
// or double-forked included: orphans reparent to the subreaper) before it
// exits with the command's status.
//
// Elsewhere, and on Linux when /proc/self/exe cannot be run, the command is
// started directly in a process group of its own: signals reach the group,
// so a process that leaves the group (setsid, setpgid) survives, and only
// Linux's parent-death signal reaches the command when Rebound dies without
// cleaning up.
package proc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Cmd describes a command to start.
type Cmd struct {
	// Name is the program: a path, or a name without a slash looked up in
	// Rebound's PATH, as exec.Command does.
	Name string
	Args []string // the arguments after the name
	Dir  string   // the working directory; "" is Rebound's
	// Env is the environment; nil means Rebound's (os.Environ) with PWD set
	// to Dir, as os/exec does. Of a name given twice, the last value wins.
	Env []string
	// The standard streams; nil is the null device.
	Stdin, Stdout, Stderr *os.File
	// CmdLine, on Windows, is the command line passed whole to the program
	// in place of Args joined by the C runtime's quoting rules, which
	// cmd.exe does not follow. Elsewhere it must be empty.
	CmdLine string
}

// Process is a started command. Its methods may be called from any
// goroutine; Wait must be called exactly once.
type Process struct {
	cmd *exec.Cmd
	pid int // the command's own pid, not the reaper's

	// ctl is the reaper's control socket (nil without a reaper): closing it
	// makes the reaper kill everything.
	ctl *os.File

	// group is what reaches everything the command started without a
	// reaper: on Windows a job object, elsewhere nothing to hold.
	group group

	mu       sync.Mutex
	killed   bool
	waited   bool
	backstop *time.Timer // kills the reaper itself if it ignores Kill
}

// killWait bounds how long Kill leaves the reaper to clean up before the
// reaper itself is killed. It exceeds the reaper's own bound on clean-up
// (teardownLimit), so only a reaper that has stopped working meets it.
const killWait = 5 * time.Second

// Start starts the command. The error is the one exec.Cmd.Start would give
// (a name not found in PATH, a missing directory, "fork/exec PATH: no such
// file or directory").
func Start(c Cmd) (*Process, error) {
	name := c.Name
	if filepath.Base(name) == name {
		lp, err := exec.LookPath(name)
		if err != nil {
			return nil, err
		}
		name = lp
	}
	if c.Dir != "" {
		// Checked here, as os.StartProcess does only without SysProcAttr:
		// the fork's error would name the program, not the directory.
		if _, err := os.Stat(c.Dir); err != nil {
			if pe, ok := err.(*os.PathError); ok {
				pe.Op = "chdir"
			}
			return nil, err
		}
	}
	if c.CmdLine != "" && runtime.GOOS != "windows" {
		return nil, errors.New("proc: CmdLine is for Windows only")
	}
	env := c.Env
	if env == nil {
		env = Environ(Secrets{}, c.Dir)
	}
	env = dedupEnv(env)
	if canReap() {
		return startReaped(c, name, env)
	}
	return startDirect(c, name, env)
}

// startDirect starts the command itself in a new process group.
func startDirect(c Cmd, name string, env []string) (*Process, error) {
	cmd := &exec.Cmd{Path: name, Args: append([]string{c.Name}, c.Args...), Dir: c.Dir, Env: env}
	setStdio(cmd, c)
	if err := setGroup(cmd, c); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, pid: cmd.Process.Pid}
	if err := p.group.join(cmd); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return p, nil
}

// setStdio gives cmd c's streams. A nil *os.File must stay a nil
// interface, which os/exec reads as the null device.
func setStdio(cmd *exec.Cmd, c Cmd) {
	if c.Stdin != nil {
		cmd.Stdin = c.Stdin
	}
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
}

// Pid is the command's process ID (under a reaper, not the reaper's).
func (p *Process) Pid() int { return p.pid }

// Hangup sends SIGHUP to the command's process group, as a terminal does
// when it closes. Without process groups it does nothing.
func (p *Process) Hangup() { p.signal(sigHangup) }

// Terminate sends SIGTERM to the command's process group, asking it to
// exit. Without process groups it kills the command.
func (p *Process) Terminate() { p.signal(sigTerminate) }

// Kill ends the command and everything it started, at once. It does not
// wait: Wait returns once they are gone. Safe to call more than once and
// after Wait.
func (p *Process) Kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waited {
		if p.ctl == nil {
			// Without a reaper, members of the group may outlive the
			// command itself.
			p.group.kill(p.pid)
		}
		return
	}
	if p.killed {
		return
	}
	p.killed = true
	if p.ctl == nil {
		p.group.kill(p.pid)
		_ = p.cmd.Process.Kill() // in case it left its group
		return
	}
	_ = p.ctl.Close()
	p.backstop = time.AfterFunc(killWait, func() { _ = p.cmd.Process.Kill() })
}

// Wait waits for the command to exit and, under a reaper, for everything
// it started to be killed. The state is the command's; the error is
// exec.Cmd.Wait's (an *exec.ExitError for a command that failed).
func (p *Process) Wait() (*os.ProcessState, error) {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.waited = true
	if p.backstop != nil {
		p.backstop.Stop()
	}
	if p.ctl != nil && !p.killed {
		_ = p.ctl.Close()
	}
	p.group.release()
	p.mu.Unlock()
	return p.cmd.ProcessState, err
}

// signal sends sig to the command's group: under a reaper, through the
// reaper, which forwards it while the command runs.
func (p *Process) signal(sig groupSignal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctl != nil {
		if !p.waited {
			_ = p.cmd.Process.Signal(sig.os())
		}
		return
	}
	p.group.signal(p.cmd.Process, sig)
}

// dedupEnv keeps the last value of each name, as os/exec does: a program's
// getenv would find the first.
func dedupEnv(env []string) []string {
	last := make(map[string]int, len(env))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	out := make([]string, 0, len(last))
	for i, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}

// Environ is Rebound's environment (os.Environ) without s, with PWD set to
// dir when dir is given, as os/exec sets it for an inherited environment.
func Environ(s Secrets, dir string) []string {
	env := s.Scrub(os.Environ())
	if dir != "" {
		if abs, err := filepath.Abs(dir); err == nil {
			env = append(env, "PWD="+abs)
		}
	}
	return env
}

// Secrets are what a child's environment must not carry: the provider's API
// key and the variable that holds it.
type Secrets struct {
	// Names are variables dropped whatever their value.
	Names []string
	// Values are dropped under any name: a variable is dropped when its
	// value equals one of them, or contains one of at least
	// minContainedSecret bytes. Empty values are ignored.
	Values []string
}

// minContainedSecret is the shortest secret looked for inside a longer
// value ("Bearer sk-…"); a shorter one could match by chance.
const minContainedSecret = 8

// Scrub returns env without the variables s names or whose values hold one
// of s's values. env itself is not changed.
func (s Secrets) Scrub(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !s.secret(name, value) {
			out = append(out, kv)
		}
	}
	return out
}

func (s Secrets) secret(name, value string) bool {
	for _, n := range s.Names {
		if n != "" && n == name {
			return true
		}
	}
	for _, v := range s.Values {
		switch {
		case v == "":
		case value == v:
			return true
		case len(v) >= minContainedSecret && strings.Contains(value, v):
			return true
		}
	}
	return false
}
