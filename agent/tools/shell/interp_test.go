package shell

import (
	"slices"
	"testing"
)

// Unix runs sh -c; Windows cmd.exe /d /s /c, from ComSpec only when it is
// an absolute path to a cmd.exe.
func TestInterpFor(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "freebsd"} {
		i := InterpFor(goos, `C:\Windows\system32\cmd.exe`)
		name, args := i.Argv("echo hi")
		if i.Name != "sh -c" || i.Lang != "sh" || name != "/bin/sh" || !slices.Equal(args, []string{"-c", "echo hi"}) {
			t.Errorf("%s: %+v runs %s %q", goos, i, name, args)
		}
		if _, _, line := i.cmd("echo hi"); line != "" {
			t.Errorf("%s: command line %q, want none (argv)", goos, line)
		}
	}
	for _, tt := range []struct{ comSpec, want string }{
		{`C:\Windows\system32\cmd.exe`, `C:\Windows\system32\cmd.exe`},
		{`c:/windows/System32/CMD.EXE`, `c:/windows/System32/CMD.EXE`},
		{`\\server\share\cmd.exe`, `\\server\share\cmd.exe`},
		{"", "cmd.exe"},
		{`cmd.exe`, "cmd.exe"},                 // relative: looked up, not trusted as a path
		{`C:\tools\powershell.exe`, "cmd.exe"}, // not cmd.exe: its syntax is not what the model was told
		{`C:\evil\cmd.exe.bat`, "cmd.exe"},     // not cmd.exe either
		{`..\cmd.exe`, "cmd.exe"},
	} {
		i := InterpFor("windows", tt.comSpec)
		name, args := i.Argv(`echo "a b" & dir`)
		if i.Name != "cmd.exe /c" || i.Lang != "bat" || name != tt.want || !slices.Equal(args, []string{"/d", "/s", "/c", `echo "a b" & dir`}) {
			t.Errorf("ComSpec %q: %+v runs %s %q, want %s /d /s /c", tt.comSpec, i, name, args, tt.want)
		}
		// cmd.exe /s strips the first and the last quote of what follows
		// /c and runs the rest verbatim: the command, quotes and all.
		if _, _, line := i.cmd(`echo "a b" & dir`); line != `"`+tt.want+`" /d /s /c "echo "a b" & dir"` {
			t.Errorf("ComSpec %q: command line %s", tt.comSpec, line)
		}
	}
}

// An editor's terminal runs /bin/sh -c on Unix. On Windows it runs
// Rebound's own binary with one argument and the command in the
// environment: what the editor must quote (by the C runtime's rules, a
// PowerShell's, a POSIX shell's, or not at all) holds nothing any of them
// changes, whatever the command.
func TestInterp_Terminal(t *testing.T) {
	const self = `C:\Program Files\Rebound\rebound.exe`
	for _, goos := range []string{"linux", "darwin"} {
		got := InterpFor(goos, "").Terminal(`echo "a b" & ls`, self)
		if got.Program != "/bin/sh" || !slices.Equal(got.Args, []string{"-c", `echo "a b" & ls`}) || got.Env != nil {
			t.Errorf("%s: terminal runs %+v", goos, got)
		}
	}
	win := InterpFor("windows", `C:\Windows\system32\cmd.exe`)
	for _, command := range []string{`echo "a  b"& echo c`, `findstr /c:"x y" "C:\dir with spaces\f.txt"`, "%PATH%", `"`, `\"`, "a\tb", "echo x\r\necho y", "", `C:\dir\`} {
		got := win.Terminal(command, self)
		if got.Program != self || !slices.Equal(got.Args, []string{TerminalArg}) || !slices.Equal(got.Env, []EnvVar{{TerminalCommandEnv, command}}) {
			t.Errorf("%q: terminal runs %+v", command, got)
		}
	}
	for _, r := range TerminalArg + TerminalCommandEnv {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-' || r == '_') {
			t.Errorf("%q in the argument or the variable's name: some shell or quoting rule changes it", r)
		}
	}
	// Rebound's binary unknown: cmd.exe itself, as before.
	if got := win.Terminal(`echo hi`, ""); got.Program != `C:\Windows\system32\cmd.exe` || !slices.Equal(got.Args, []string{"/d", "/s", "/c", "echo hi"}) || got.Env != nil {
		t.Errorf("without Rebound's binary: terminal runs %+v", got)
	}
}
