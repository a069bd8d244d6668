//go:build unix

package mcpmock

import (
	"os/exec"
	"syscall"
)

// detach puts cmd in a session of its own, out of reach of signals to the
// server's process group.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
