package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

func TestGoneAndReadPID(t *testing.T) {
	if Gone(os.Getpid()) {
		t.Error("Gone(this process) = true")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	file := filepath.Join(t.TempDir(), "pid")
	if err := os.WriteFile(file, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ReadPID(t, file); got != pid {
		t.Errorf("ReadPID = %d, want %d", got, pid)
	}
	if Gone(pid) {
		t.Error("Gone(a running sleep) = true")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !Gone(pid) {
		t.Error("Gone(a killed and reaped sleep) = false")
	}
}
