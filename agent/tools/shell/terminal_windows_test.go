package shell

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// A command in an editor's terminal runs as it runs locally: same output,
// same exit code, however the editor makes the command line of what it is
// asked to run (quoted by the C runtime's rules as Go, Rust and Node do, or
// joined as is). This test binary plays Rebound's (its init is the same).
// Before, the terminal ran cmd.exe /d /s /c with the command as one
// argument, which quoting turned "a b" into \"a b\".
func TestTerminal_RunsAsLocallyWindows(t *testing.T) {
	dir, err := os.MkdirTemp("", "rebound-term-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) }) // Wine 8 cannot: see workspace_windows_test.go
	commands := []string{
		`echo "a  b"& echo c`,
		`echo "x & y" | findstr x`,
		`echo %OS%`,
		`if "1"=="1" (echo yes) else (echo no)`,
		`echo a ^& b`,
		`echo "unbalanced & echo z`,
		`echo C:\dir\`,
		`echo "C:\dir with spaces\"`,
		`exit /b 3`,
		`nosuchcommand-rebound`,
	}
	written := len(commands)
	// And commands nobody wrote down: echo followed by what cmd.exe and
	// the quoting rules treat specially.
	rng := rand.New(rand.NewPCG(3, 4))
	const alphabet = `ab "^%&()\!,=;`
	for range 6 { // few: under Wine each command takes about a second
		var b strings.Builder
		b.WriteString("echo ")
		for range 1 + rng.IntN(12) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		commands = append(commands, b.String())
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, command := range commands {
		local, err := Run(t.Context(), Options{Command: command, Dir: dir})
		if err != nil {
			t.Fatalf("%q locally: %v", command, err)
		}
		tc := Platform.Terminal(command, self)
		env := os.Environ()
		for _, v := range tc.Env {
			env = append(env, v.Name+"="+v.Value)
		}
		editors := []string{"quoted", "joined"}
		if i >= written {
			editors = editors[:1] // the quoting is what changes commands
		}
		for _, editor := range editors {
			cmd := exec.Command(tc.Program, tc.Args...)
			if editor == "joined" {
				cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `"` + tc.Program + `" ` + strings.Join(tc.Args, " ")}
			}
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("%q in a terminal (%s): %v", command, editor, err)
			}
			if string(out) != local.Output || local.ExitCode == nil || code != *local.ExitCode {
				t.Errorf("%q in a terminal (%s): %q, exit %d; locally %q, exit %v", command, editor, out, code, local.Output, derefOr(local.ExitCode))
			}
		}
	}
}

func derefOr(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
