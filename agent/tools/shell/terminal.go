package shell

// TerminalArg and TerminalCommandEnv make Rebound's binary run a command
// for an editor's terminal on Windows (see Interp.Terminal): its one
// argument, and the variable holding the command.
const (
	TerminalArg        = "__rebound-terminal"
	TerminalCommandEnv = "REBOUND_TERMINAL_COMMAND"
)

// TerminalCommand is what an editor's terminal (ACP terminal/create) is
// asked to run.
type TerminalCommand struct {
	Program string
	Args    []string
	Env     []EnvVar // set for the program, on top of the editor's
}

// EnvVar is one environment variable.
type EnvVar struct{ Name, Value string }

// Terminal is what an editor's terminal runs to run command as Run runs it
// here. self is Rebound's own binary ("" if unknown).
//
// On Unix it is /bin/sh -c command: an editor hands the arguments to the
// program as they are. On Windows an editor must make one command line of
// them, by the C runtime's quoting rules or its own shell's (Zed runs them
// through the user's PowerShell or Git Bash), and cmd.exe does not read
// those back: a command holding double quotes would reach it changed, and
// Git Bash turns /c into C:/. So the terminal runs self with the one
// argument TerminalArg and the command in TerminalCommandEnv, which no
// quoting changes; there Rebound starts cmd.exe with the very command line
// a local run gives it, in a job object that kills what the command leaves
// behind, and exits with its exit code (runTerminal). Without self, the
// terminal runs cmd.exe /d /s /c command, for editors that pass the
// command through unquoted.
func (i Interp) Terminal(command, self string) TerminalCommand {
	if i.windows && self != "" {
		return TerminalCommand{Program: self, Args: []string{TerminalArg},
			Env: []EnvVar{{TerminalCommandEnv, command}}}
	}
	program, args := i.Argv(command)
	return TerminalCommand{Program: program, Args: args}
}
