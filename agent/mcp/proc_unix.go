//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the server in a new process group led by itself, so
// that one signal reaches it and every child it starts: servers launched
// through npx or uvx are often a wrapper with the real server as its child.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// terminateGroup asks the group to exit; killGroup makes it. Errors are
// ignored: the usual one is ESRCH, the group having already gone. A group ID
// is not reused while any member is alive, so this never reaches a stranger.
func terminateGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGTERM) }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
