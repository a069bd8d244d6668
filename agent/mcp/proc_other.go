//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

// Without process groups only the server itself can be reached, and there is
// no gentler signal than killing it.
func setProcessGroup(*exec.Cmd) {}

func terminateGroup(int) {}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
