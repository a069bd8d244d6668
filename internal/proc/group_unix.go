//go:build unix

package proc

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

type groupSignal syscall.Signal

const (
	sigHangup    = groupSignal(syscall.SIGHUP)
	sigTerminate = groupSignal(syscall.SIGTERM)
)

func (s groupSignal) os() os.Signal { return syscall.Signal(s) }

// setGroup puts a directly started command in a new process group led by
// itself, so that one signal reaches it and every child that stays in the
// group: servers launched through npx or uvx are often a wrapper with the
// real server as its child.
func setGroup(cmd *exec.Cmd, _ Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	return nil
}

// group: a process group is named by its leader's pid, so there is nothing
// to hold.
type group struct{}

func (*group) join(*exec.Cmd) error { return nil }

// signal signals the process group that p leads. Errors are ignored:
// the usual one is ESRCH, the group having already gone. The group ID cannot
// be reused while any member is alive, so this never reaches a stranger's
// group.
func (*group) signal(p *os.Process, sig groupSignal) { _ = syscall.Kill(-p.Pid, syscall.Signal(sig)) }

func (*group) kill(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func (*group) release() {}

// ExitStatus reads the exit code or the fatal signal from a finished process: the
// exit code, or nil and the signal's name ("SIGKILL").
func ExitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil {
		return nil, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, signalName(ws.Signal())
	}
	if ps.Exited() {
		code := ps.ExitCode()
		return &code, ""
	}
	return nil, ""
}

// signalName spells signals the way shells and users do; syscall's String
// gives descriptions such as "killed".
func signalName(s syscall.Signal) string {
	if n, ok := signalNames[s]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(s))
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGABRT: "SIGABRT",
	syscall.SIGALRM: "SIGALRM",
	syscall.SIGBUS:  "SIGBUS",
	syscall.SIGFPE:  "SIGFPE",
	syscall.SIGHUP:  "SIGHUP",
	syscall.SIGILL:  "SIGILL",
	syscall.SIGINT:  "SIGINT",
	syscall.SIGKILL: "SIGKILL",
	syscall.SIGPIPE: "SIGPIPE",
	syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGSEGV: "SIGSEGV",
	syscall.SIGSYS:  "SIGSYS",
	syscall.SIGTERM: "SIGTERM",
	syscall.SIGTRAP: "SIGTRAP",
	syscall.SIGUSR1: "SIGUSR1",
	syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGXCPU: "SIGXCPU",
	syscall.SIGXFSZ: "SIGXFSZ",
}
