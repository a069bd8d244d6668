package proc_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/internal/testkit"
)

// These tests start real processes, so real time passes; waits are bounded
// by what the processes do, and the bounds separate "promptly" from "waited
// for sleep 60".
const prompt = 3 * time.Second

// envParent makes the test binary a stand-in for Rebound: it starts the
// command in $PROC_TEST_COMMAND with proc.Start, says so on stdout, and
// waits to be killed.
const envParent = "PROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(envParent) == "1" {
		p, err := proc.Start(proc.Cmd{Name: "/bin/sh", Args: []string{"-c", os.Getenv("PROC_TEST_COMMAND")}})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("started", p.Pid())
		_, _ = p.Wait()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// escapes is a command that leaves three processes that no process-group
// signal reaches, each writing its pid to a file in the working directory:
// one in a session of its own, one double-forked into a session of its
// own, one that only ignores SIGHUP and SIGTERM.
const escapes = `setsid sh -c 'echo $$ > setsid.pid; exec sleep 60' </dev/null >/dev/null 2>&1 &
sh -c 'setsid sh -c "echo \$\$ > double.pid; exec sleep 60" & ' </dev/null >/dev/null 2>&1
(trap '' HUP TERM; sh -c 'echo $$ > stubborn.pid; trap "" HUP TERM; exec sleep 60') </dev/null >/dev/null 2>&1 &
while ! [ -s setsid.pid ] || ! [ -s double.pid ] || ! [ -s stubborn.pid ]; do sleep 0.01; done
echo ready`

var escapePIDFiles = []string{"setsid.pid", "double.pid", "stubborn.pid"}

func TestStart_CommandExits_LeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := proc.Start(proc.Cmd{Name: "/bin/sh", Args: []string{"-c", escapes + "; exit 4"}, Dir: dir, Stdout: f})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := p.Wait()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || ps.ExitCode() != 4 {
		t.Errorf("Wait() = %v, %v; want exit status 4", ps, err)
	}
	if b, _ := os.ReadFile(out); string(b) != "ready\n" {
		t.Errorf("output = %q", b)
	}
	for _, name := range escapePIDFiles {
		waitGone(t, testkit.ReadPID(t, filepath.Join(dir, name)), name)
	}
}

func TestKill_LeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p, err := proc.Start(proc.Cmd{Name: "/bin/sh", Args: []string{"-c", escapes + "; exec sleep 60"}, Dir: dir, Stdout: w})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 6)
	if _, err := io.ReadFull(r, line); err != nil || string(line) != "ready\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	begin := time.Now()
	p.Kill()
	ps, _ := p.Wait()
	if took := time.Since(begin); took > prompt {
		t.Errorf("Kill and Wait took %v", took)
	}
	if ws := ps.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("state = %v, want killed by SIGKILL", ps)
	}
	for _, name := range escapePIDFiles {
		waitGone(t, testkit.ReadPID(t, filepath.Join(dir, name)), name)
	}
	// Nobody holds the output pipe any more.
	if b, err := io.ReadAll(r); err != nil || len(b) != 0 {
		t.Errorf("after Kill, read %q, %v; want EOF", b, err)
	}
	p.Kill() // again, after Wait: harmless
}

// Rebound killed with SIGKILL (it can clean nothing up) takes everything
// its commands started with it.
func TestParentKilled_LeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe)
	parent.Dir = dir
	parent.Env = append(os.Environ(), envParent+"=1", "PROC_TEST_COMMAND="+escapes+" > ready; exec sleep 60")
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	var pid int
	if _, err := fmt.Fscanf(stdout, "started %d\n", &pid); err != nil {
		t.Fatalf("the parent did not start the command: %v", err)
	}
	for deadline := time.Now().Add(prompt); ; time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, "ready")); string(b) == "ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command did not get ready")
		}
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitGone(t, pid, "the command")
	for _, name := range escapePIDFiles {
		waitGone(t, testkit.ReadPID(t, filepath.Join(dir, name)), name)
	}
}

func TestStart_Status(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command string
		want    string // os.ProcessState.String()
	}{
		{"exit zero", "true", "exit status 0"},
		{"exit code", "exit 3", "exit status 3"},
		{"killed by SIGSEGV", "kill -SEGV $$", "signal: segmentation fault"},
		{"killed by SIGKILL", "kill -KILL $$", "signal: killed"},
		{"killed by SIGTERM", "kill -TERM $$", "signal: terminated"},
		{"killed by SIGABRT", "kill -ABRT $$", "signal: aborted"},
		{"killed by SIGUSR1", "kill -USR1 $$", "signal: user defined signal 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := proc.Start(proc.Cmd{Name: "sh", Args: []string{"-c", tt.command}})
			if err != nil {
				t.Fatal(err)
			}
			ps, _ := p.Wait()
			if got := ps.String(); got != tt.want {
				t.Errorf("state = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStart_Errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  proc.Cmd
		want string
		is   error
	}{
		{"missing program", proc.Cmd{Name: "/no/such/program"}, "fork/exec /no/such/program: no such file or directory", fs.ErrNotExist},
		{"not in PATH", proc.Cmd{Name: "no-such-program-rebound"}, `exec: "no-such-program-rebound": executable file not found in $PATH`, exec.ErrNotFound},
		{"not executable", proc.Cmd{Name: "/etc/passwd"}, "fork/exec /etc/passwd: permission denied", fs.ErrPermission},
		{"missing directory", proc.Cmd{Name: "/bin/true", Dir: "/no/such/dir"}, "chdir /no/such/dir: no such file or directory", fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := proc.Start(tt.cmd)
			if err == nil {
				p.Wait()
				t.Fatal("Start succeeded")
			}
			if err.Error() != tt.want || !errors.Is(err, tt.is) {
				t.Errorf("Start() error = %v, want %s (is %v)", err, tt.want, tt.is)
			}
		})
	}
}

// Terminate and Hangup reach the command's group; what the command does
// with them is its exit status.
func TestSignals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		send func(*proc.Process)
		want string
	}{
		{"terminate", (*proc.Process).Terminate, "exit status 15"},
		{"hangup", (*proc.Process).Hangup, "exit status 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			p, err := proc.Start(proc.Cmd{Name: "/bin/sh", Args: []string{"-c", "trap 'exit 15' TERM; trap 'exit 1' HUP; echo ready; while :; do sleep 0.01; done"}, Stdout: w})
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 6)
			if _, err := io.ReadFull(r, line); err != nil {
				t.Fatal(err)
			}
			tt.send(p)
			ps, _ := p.Wait()
			if ps.String() != tt.want {
				t.Errorf("state = %v, want %s", ps, tt.want)
			}
		})
	}
}

func TestStart_LastValueWins(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// env shows every entry; a Go program's Getenv would see the first.
	p, err := proc.Start(proc.Cmd{Name: "env", Env: []string{"A=first", "B=b", "A=last"}, Stdout: f})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	if b, _ := os.ReadFile(out); string(b) != "B=b\nA=last\n" {
		t.Errorf("environment = %q, want B=b and A=last", b)
	}
}

func TestEnviron(t *testing.T) {
	t.Setenv("PROC_TEST_KEY", "sk-proc-test-secret")
	t.Setenv("PROC_TEST_COPY", "sk-proc-test-secret")
	t.Setenv("PROC_TEST_BEARER", "Bearer sk-proc-test-secret")
	t.Setenv("PROC_TEST_KEEP", "kept")
	dir := t.TempDir()
	env := proc.Environ(proc.Secrets{Names: []string{"PROC_TEST_KEY"}, Values: []string{"", "sk-proc-test-secret"}}, dir)
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "sk-proc-test-secret") || strings.Contains(joined, "PROC_TEST_KEY") {
		t.Errorf("the environment holds the secret:\n%s", joined)
	}
	if !strings.Contains(joined, "PROC_TEST_KEEP=kept") || !strings.HasSuffix(joined, "PWD="+dir) {
		t.Errorf("the environment lost a variable or lacks PWD:\n%s", joined)
	}
}

func TestSecrets_Scrub(t *testing.T) {
	t.Parallel()
	s := proc.Secrets{Names: []string{"API_KEY"}, Values: []string{"short", "long-enough-secret"}}
	env := []string{"API_KEY=anything", "A=short", "B=not short", "C=x long-enough-secret y", "D=plain", "API_KEY_2=other", "E="}
	got := strings.Join(s.Scrub(env), " ")
	if want := "B=not short D=plain API_KEY_2=other E="; got != want {
		t.Errorf("Scrub() = %s, want %s", got, want)
	}
}

// waitGone fails unless pid is gone within a moment: a killed process
// takes a moment to die. A survivor is killed, so it cannot outlive the
// test.
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !testkit.Gone(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s (pid %d) is still running", what, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return
		}
	}
}
