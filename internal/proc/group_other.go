//go:build !unix

package proc

import (
	"os"
	"os/exec"
)

// Without process groups only the command itself can be reached: hangup
// does nothing and terminate kills it outright.
type groupSignal int

const (
	sigHangup groupSignal = iota
	sigTerminate
)

func (groupSignal) os() os.Signal { return os.Kill }

func setGroup(*exec.Cmd) {}

func signalGroup(p *os.Process, sig groupSignal) {
	if sig != sigHangup {
		_ = p.Kill()
	}
}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

// ExitStatus: without signals, only an exit code.
func ExitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil || !ps.Exited() {
		return nil, ""
	}
	code := ps.ExitCode()
	return &code, ""
}
