package shell

import (
	"os"
	"runtime"
)

// Interp is the command interpreter run_command hands a command to, locally
// and in an editor's terminal.
//
// On Windows it is cmd.exe: the one interpreter every Windows has (a
// PowerShell may be missing, old or slow to start, and an sh on PATH is a
// developer's choice, not the system's), and one the model knows. It runs
// with /d (no AutoRun commands from the registry) and /s /c, under which
// cmd.exe takes the rest of its command line verbatim once the outer
// quotes are stripped, so the command is never re-quoted by the C
// runtime's rules, which cmd.exe does not follow.
type Interp struct {
	// Name says how the command runs, for the model and the user:
	// "sh -c" or "cmd.exe /c".
	Name string
	// Lang is the language of a Markdown code block showing a command.
	Lang string

	windows bool
	program string // the interpreter: /bin/sh, or %ComSpec% (cmd.exe)
}

// Platform is this system's interpreter.
var Platform = InterpFor(runtime.GOOS, os.Getenv("ComSpec"))

// InterpFor is goos's interpreter; comSpec is the ComSpec variable, which
// names cmd.exe on Windows (ignored unless it is an absolute path to a
// cmd.exe).
func InterpFor(goos, comSpec string) Interp {
	if goos != "windows" {
		return Interp{Name: "sh -c", Lang: "sh", program: "/bin/sh"}
	}
	program := "cmd.exe"
	if winAbs(comSpec) && equalFoldASCII(winBase(comSpec), "cmd.exe") {
		program = comSpec
	}
	return Interp{Name: "cmd.exe /c", Lang: "bat", windows: true, program: program}
}

// Argv is the program and arguments that run command, for an editor's
// terminal (which quotes them by its own rules): /bin/sh -c command, or
// cmd.exe /d /s /c command.
func (i Interp) Argv(command string) (string, []string) {
	if i.windows {
		return i.program, []string{"/d", "/s", "/c", command}
	}
	return i.program, []string{"-c", command}
}

// cmd is the proc.Cmd fields that run command locally: on Windows the
// whole command line, quoted as cmd.exe /s expects.
func (i Interp) cmd(command string) (name string, args []string, cmdLine string) {
	name, args = i.Argv(command)
	if i.windows {
		cmdLine = `"` + name + `" /d /s /c "` + command + `"`
	}
	return name, args, cmdLine
}

// winAbs reports whether p is an absolute Windows path (C:\..., \\server\...),
// whatever the host.
func winAbs(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		c := p[0] | 0x20
		return 'a' <= c && c <= 'z'
	}
	return len(p) >= 2 && (p[0] == '\\' || p[0] == '/') && (p[1] == '\\' || p[1] == '/')
}

// winBase is a Windows path's last element, whatever the host.
func winBase(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '\\' || p[i] == '/' || p[i] == ':' {
			return p[i+1:]
		}
	}
	return p
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}
