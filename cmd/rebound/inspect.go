package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/inspect"
	"github.com/rebound-agent/rebound/session"
)

func init() {
	register(command{name: "inspect", summary: "print the timeline of a session log: turns, attempts, retries, waits", run: runInspect})
}

const inspectUsage = `Usage: rebound inspect [--json] [--html FILE] [--state-dir DIR] SESSION

Prints the timeline of a session's log: its turns; the provider attempts
(steps) of each turn and how each ended (failure code, HTTP status, request
id); the retry scheduled after a failed attempt, with the delay it planned
and the wait that really happened (or that a cancel or a crash cut short);
compactions; fallback model switches; how each turn ended; and totals per
turn. Times in a turn's table are counted from the turn's start.

SESSION is a log file (a path ending in .jsonl or containing a /; a named
pipe too, so "rebound inspect <(zcat log.jsonl.gz)" works), "-" for a log
on standard input, or a session id, looked up as <state dir>/sessions/<id>.jsonl ('rebound
sessions' lists the ids). The state dir comes
from --state-dir, else REBOUND_STATE_DIR, else state_dir in the config file
(--config, REBOUND_CONFIG), else $XDG_STATE_HOME/rebound or
~/.local/state/rebound, as for serve.

The log is only read, never repaired. A log that breaks the log's rules is
reported as <file>:<line>: <the rule broken>. A torn last line (a write a
crash cut short) and a turn left open are reported on stderr as warnings, and
the rest is shown.

Exit status: 0 when the timeline was printed, 1 when the session is missing
or its log is invalid or unreadable, 2 on a usage error.

Examples:
  rebound inspect sess_0123abcd
  rebound inspect --json ./sess_0123abcd.jsonl | jq .totals
  rebound inspect --html timeline.html sess_0123abcd

Flags:
`

func runInspect(_ context.Context, args []string, s streams, e env) int {
	o, code, ok := parseInspectArgs(args, s)
	if !ok {
		return code
	}
	path, err := inspectPath(o.session, o.given(), e)
	if err != nil {
		fmt.Fprintf(s.err, "rebound inspect: %v\n", err)
		return 1
	}
	tl, err := loadTimeline(path, s.in)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			fmt.Fprintf(s.err, "rebound inspect: no session log at %s\n", path)
		} else {
			// An *session.InvariantError reads "<path>:<line>: <invariant>".
			fmt.Fprintf(s.err, "rebound inspect: %v\n", err)
		}
		return 1
	}
	for _, w := range tl.Warnings {
		fmt.Fprintf(s.err, "rebound inspect: warning: %s\n", w)
	}
	if err := writeTimeline(tl, o, s.out); err != nil {
		fmt.Fprintf(s.err, "rebound inspect: %v\n", err)
		return 1
	}
	return 0
}

// inspectArgs is rebound inspect's command line.
type inspectArgs struct {
	session  string
	given    func() config.Flags
	asJSON   bool
	htmlPath string
}

// parseInspectArgs reads rebound inspect's command line; when ok is false
// the command ends with code (0 after --help, 2 on a usage error), its
// reason told on s.err.
func parseInspectArgs(args []string, s streams) (o inspectArgs, code int, ok bool) {
	fs := flag.NewFlagSet("rebound inspect", flag.ContinueOnError)
	fs.SetOutput(s.err)
	o.given = config.RegisterFlags(fs)
	fs.BoolVar(&o.asJSON, "json", false, "print the timeline as indented JSON instead of text")
	fs.StringVar(&o.htmlPath, "html", "", "also write the timeline drawn as one self-contained HTML page to `FILE`")
	fs.Usage = func() { inspectHelp(fs) }
	// The flag package stops at the first argument; take SESSION out and go
	// on, so flags may also follow it ("rebound inspect sess_1 --json").
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return o, 0, false
			}
			return o, 2, false
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(positional) != 1 {
		if len(positional) == 0 {
			fmt.Fprintln(s.err, "rebound inspect: which session? Give a session id or a log file; 'rebound sessions' lists the ids.")
		} else {
			fmt.Fprintf(s.err, "rebound inspect: one session at a time, got %d: %s\n", len(positional), strings.Join(positional, " "))
		}
		fmt.Fprintln(s.err, "Usage: rebound inspect [--json] [--html FILE] [--state-dir DIR] SESSION (see --help)")
		return o, 2, false
	}
	o.session = positional[0]
	return o, 0, true
}

// inspectHelp prints the usage and only the flags that matter here: the
// provider flags serve shares are accepted, for a shared command line,
// but change nothing.
func inspectHelp(fs *flag.FlagSet) {
	fmt.Fprint(fs.Output(), inspectUsage)
	shown := flag.NewFlagSet("", flag.ContinueOnError)
	shown.SetOutput(fs.Output())
	for _, name := range []string{"json", "html", "state-dir", "config"} {
		if f := fs.Lookup(name); f != nil {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(name).DefValue = f.DefValue // not the value parsed so far
		}
	}
	shown.PrintDefaults()
}

// writeTimeline writes the HTML page o asks for, then prints the timeline
// as text or JSON to out.
func writeTimeline(tl *inspect.Timeline, o inspectArgs, out io.Writer) error {
	if o.htmlPath != "" {
		var page bytes.Buffer
		if err := tl.HTML(&page); err != nil {
			return fmt.Errorf("render HTML: %w", err)
		}
		// 0600, like the logs it shows: prompts and replies are private.
		if err := os.WriteFile(o.htmlPath, page.Bytes(), 0o600); err != nil {
			return err
		}
	}
	if o.asJSON {
		return tl.JSON(out)
	}
	return tl.Text(out)
}

// inspectPath turns SESSION into the log file to read. A path is taken as
// it is; anything else must be a session id, and only then is the
// configuration loaded, so inspecting a copied log file needs no working
// config.
func inspectPath(arg string, flags config.Flags, e env) (string, error) {
	if arg == "-" {
		return arg, nil
	}
	if strings.HasSuffix(arg, ".jsonl") || strings.ContainsRune(arg, '/') || strings.ContainsRune(arg, filepath.Separator) {
		return arg, nil
	}
	if err := session.CheckSessionID(arg); err != nil {
		return "", fmt.Errorf("%q is neither a log file (a path ending in .jsonl) nor a session id: %w", arg, err)
	}
	cfg, err := config.Load(flags, e.getenv, e.home)
	if err != nil {
		return "", fmt.Errorf("find session %s: %w", arg, err)
	}
	path := session.Path(cfg.StateDir, arg)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no session %q: looked for %s (state dir %s; set it with --state-dir or %s; 'rebound sessions' lists the sessions there)", arg, path, cfg.StateDir, config.EnvStateDir)
	}
	return path, nil
}

// maxPipedLog bounds a log read from a pipe, which has no size to check
// first: far above any session's log, far below what would exhaust memory.
const maxPipedLog = 1 << 30

// loadTimeline reads the log at path: a file, or a pipe ("-" for standard
// input, or a named pipe such as "<(zcat log.jsonl.gz)" gives), read to its
// end within maxPipedLog. A log file itself is never a pipe (session logs
// refuse one), so only inspect reads them.
func loadTimeline(path string, stdin io.Reader) (*inspect.Timeline, error) {
	if path == "-" {
		if stdin == nil {
			return nil, errors.New("no standard input to read the log from")
		}
		return inspect.Read(&cappedReader{r: stdin, left: maxPipedLog}, "standard input")
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode()&fs.ModeNamedPipe != 0 {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return inspect.Read(&cappedReader{r: f, left: maxPipedLog}, path)
	}
	return inspect.Load(path)
}

// cappedReader reads r until left bytes have been read, then fails: a log
// cut silently at the cap would read as a torn one.
type cappedReader struct {
	r    io.Reader
	left int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the log is longer than %d MiB, more than inspect reads from a pipe; save it to a file first", maxPipedLog>>20)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
