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
