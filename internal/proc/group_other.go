//go:build !unix && !windows

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

func setGroup(*exec.Cmd, Cmd) error { return nil }

type group struct{}

func (*group) join(*exec.Cmd) error { return nil }

func (*group) signal(p *os.Process, sig groupSignal) {
	if sig != sigHangup {
		_ = p.Kill()
	}
}

func (*group) kill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func (*group) release() {}

// ExitStatus: without signals, only an exit code.
func ExitStatus(ps *os.ProcessState) (*int, string) {
	if ps == nil || !ps.Exited() {
		return nil, ""
	}
	code := ps.ExitCode()
	return &code, ""
}
