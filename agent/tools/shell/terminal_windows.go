package shell

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/rebound-agent/rebound/internal/proc"
)

// init makes the process the runner of a command for an editor's terminal
// when it was started as one (Interp.Terminal): every binary linking this
// package can be it, the test binaries included, as for the reaper.
func init() {
	if len(os.Args) != 2 || os.Args[1] != TerminalArg {
		return
	}
	command, ok := os.LookupEnv(TerminalCommandEnv)
	if !ok {
		return
	}
	os.Exit(runTerminal(command))
}

// runTerminal runs command with cmd.exe as Run does, on the terminal's own
// streams and in the editor's environment (less TerminalCommandEnv), and
// returns its exit code.
func runTerminal(command string) int {
	_ = os.Unsetenv(TerminalCommandEnv)
	// Ctrl+C reaches cmd.exe too, which ends what it runs and exits; this
	// process waits for it and says how it ended.
	signal.Ignore(os.Interrupt)
	if err := proc.JoinKillOnCloseJob(); err != nil {
		fmt.Fprintf(os.Stderr, "rebound: %v; what the command leaves running is not killed\n", err)
	}
	name, args, line := Platform.cmd(command)
	path, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rebound: %v\n", err)
		return 1
	}
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: line}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rebound: start %s: %v\n", name, err)
		return 1
	}
	return 0
}
