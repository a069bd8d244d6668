package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/rebound-agent/rebound/internal/text"
)

// refuseStart ends a start that cannot serve: a command line the serve
// command does not take. In a terminal the usage already printed says it
// all. Spawned by an editor (stdin is no terminal), Rebound serves the error
// as it serves a bad configuration (badconfig.go): agent-shell and
// codecompanion throw a failed agent's stderr away, so an exit before
// initialize would leave the person with "the agent exited" and nothing
// about the agent command line in their editor's settings.
func refuseStart(ctx context.Context, s streams, err error) int {
	if s.in != nil && !isTerminal(s.in) {
		if serr := serveBadConfig(ctx, err, s.in, s.out, newLogger(s.err, "")); serr != nil && ctx.Err() == nil {
			fmt.Fprintf(s.err, "rebound: %v\n", serr)
		}
	}
	return 2
}

// isTerminal reports whether r is a terminal.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// commandLineError says what is wrong with the serve command line, for the
// editor: flag's own words, the closest flag serve takes, and where the
// command line is set.
func commandLineError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if near := closestFlag(fs, name); near != "" {
			msg += fmt.Sprintf(" (did you mean --%s?)", near)
		}
	}
	return fmt.Errorf("the agent's command line: %s; this is set where the editor is told how to start rebound (run 'rebound --help' for its flags)", msg)
}

// unknownCommandError is commandLineError's for a word no subcommand has:
// an editor starts rebound with flags only (some agents are started as
// "agent acp"; Rebound is not).
func unknownCommandError(name string) error {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Errorf("the agent's command line: unknown command %q; an editor starts rebound with no command (flags only), and the commands are %s", text.ClipChars(name, 40), strings.Join(names, ", "))
}

// closestFlag is the flag of fs within two edits of name, or "".
func closestFlag(fs *flag.FlagSet, name string) string {
	if len(name) > 64 { // bounded: EditDistance is quadratic
		return ""
	}
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := text.EditDistance(strings.ToLower(name), f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}
