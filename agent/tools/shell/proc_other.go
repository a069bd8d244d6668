//go:build !unix

package shell

import (
	"os"
	"os/exec"
)

// Without process groups only the main process can be reached: hangup does
// nothing and both terminate and kill kill it outright.
type signal int

const (
	sigHangup signal = iota
	sigTerminate
	sigKill
)

func setProcessGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, sig signal) {
	if sig != sigHangup {
		_ = p.Kill()
	}
}

func exitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil || !ps.Exited() {
		return nil, ""
	}
	code := ps.ExitCode()
	return &code, ""
}
