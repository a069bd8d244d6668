//go:build unix

package proc

import (
	"os/exec"
	"testing"
)

func TestExitStatus(t *testing.T) {
	if code, sig := ExitStatus(nil); code != nil || sig != "" {
		t.Errorf("ExitStatus(nil) = %v, %q; want nil, \"\"", code, sig)
	}
	run := func(script string) (*int, string) {
		cmd := exec.Command("sh", "-c", script)
		_ = cmd.Run() // the error is the status under test
		return ExitStatus(cmd.ProcessState)
	}
	if code, sig := run("exit 3"); code == nil || *code != 3 || sig != "" {
		t.Errorf("exit 3: ExitStatus = %v, %q; want 3, \"\"", code, sig)
	}
	if code, sig := run("kill -KILL $$"); code != nil || sig != "SIGKILL" {
		t.Errorf("killed: ExitStatus = %v, %q; want nil, SIGKILL", code, sig)
	}
	if got := signalName(64); got != "signal 64" {
		t.Errorf("signalName(64) = %q, want \"signal 64\"", got)
	}
}
