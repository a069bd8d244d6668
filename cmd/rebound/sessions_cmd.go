package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/text"
	"github.com/rebound-agent/rebound/session"
)

func init() {
	register(command{name: "sessions", summary: "list the recent sessions (their ids, for rebound inspect)", run: runSessions})
}

const sessionsUsage = `Usage: rebound sessions [--limit N] [--state-dir DIR]

Lists the sessions whose logs are in the state directory, most recently
active first: the id (what 'rebound inspect' takes), when it was last
active, its title and the directory it worked in. The state dir comes from
--state-dir, else REBOUND_STATE_DIR, else state_dir in the config file
(--config, REBOUND_CONFIG), else $XDG_STATE_HOME/rebound or
~/.local/state/rebound, as for serve.

Exit status: 0 when the list was printed (an empty one too), 1 when the
state directory can't be read or the configuration is bad, 2 on a usage
error.

Flags:
`

// Bounds of the listing: the sessions shown, and the characters of a title
// and a directory (both come from logs on disk).
const (
	defaultSessionsLimit = 20
	maxSessionsLimit     = 1000
	maxTitleChars        = 60
	maxCwdChars          = 80
)

func runSessions(_ context.Context, args []string, s streams, e env) int {
	fs := flag.NewFlagSet("rebound sessions", flag.ContinueOnError)
	fs.SetOutput(s.err)
	given := config.RegisterFlags(fs)
	limit := fs.Int("limit", defaultSessionsLimit, fmt.Sprintf("show at most `N` sessions (1 to %d)", maxSessionsLimit))
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sessionsUsage)
		shown := flag.NewFlagSet("", flag.ContinueOnError)
		shown.SetOutput(fs.Output())
		for _, name := range []string{"limit", "state-dir", "config"} {
			if f := fs.Lookup(name); f != nil {
				shown.Var(f.Value, f.Name, f.Usage)
				shown.Lookup(name).DefValue = f.DefValue
			}
		}
		shown.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(s.err, "rebound sessions: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}
	if *limit < 1 || *limit > maxSessionsLimit {
		fmt.Fprintf(s.err, "rebound sessions: --limit: want 1 to %d, got %d\n", maxSessionsLimit, *limit)
		return 2
	}
	cfg, err := config.Load(given(), e.getenv, e.home)
	if err != nil {
		fmt.Fprintf(s.err, "rebound sessions: %v\n", err)
		return 1
	}
	list, more, err := session.NewIndex(cfg.StateDir, nil).Page(nil, *limit, func(session.Summary) bool { return true })
	if err != nil {
		fmt.Fprintf(s.err, "rebound sessions: list the sessions in %s: %v\n", cfg.StateDir, err)
		return 1
	}
	if err := writeSessions(s.out, cfg.StateDir, list, more); err != nil {
		fmt.Fprintf(s.err, "rebound sessions: %v\n", err)
		return 1
	}
	return 0
}

// writeSessions prints the listing: a table, most recent first, and what
// to do with it.
func writeSessions(w io.Writer, stateDir string, list []session.Summary, more bool) error {
	if len(list) == 0 {
		_, err := fmt.Fprintf(w, "No sessions in %s.\n", printable(stateDir, maxCwdChars))
		return err
	}
	fmt.Fprintf(w, "Sessions in %s, most recent first:\n\n", printable(stateDir, maxCwdChars))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAST ACTIVE\tTITLE\tDIRECTORY")
	for _, sm := range list {
		title := cmp.Or(printable(sm.Title, maxTitleChars), "(untitled)")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sm.SessionID, sm.UpdatedAt.Local().Format("2006-01-02 15:04 MST"), title, printable(sm.Cwd, maxCwdChars))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if more {
		fmt.Fprintf(w, "\nOlder sessions are not shown: --limit N shows more (up to %d).\n", maxSessionsLimit)
	}
	_, err := fmt.Fprintf(w, "\n'rebound inspect ID' shows a session's timeline (with the same --state-dir, if you gave one).\n")
	return err
}

// printable is s on one line, its control and format characters (which
// could move the cursor or reorder the text) shown as �, at most n
// characters.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) {
			return '�'
		}
		return r
	}, strings.Join(strings.Fields(s), " "))
	return text.ClipChars(s, n)
}
