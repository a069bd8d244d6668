//go:build unix

package proc

import (
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
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// signalGroup signals the process group that p leads. Errors are ignored:
// the usual one is ESRCH, the group having already gone. The group ID cannot
// be reused while any member is alive, so this never reaches a stranger's
// group.
func signalGroup(p *os.Process, sig groupSignal) { _ = syscall.Kill(-p.Pid, syscall.Signal(sig)) }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
