package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/internal/demo"
)

func init() {
	register(command{
		name:    "demo",
		summary: "watch Rebound recover from provider failures, offline (a scripted tour)",
		run:     runDemo,
	})
}

const demoUsage = `Usage: rebound demo [--fast] [--streaming live|held] [--script FILE] [--state-dir DIR]
                    [--timeout 2m]
       rebound demo --print-default

Shows, offline and in about ten seconds, what Rebound does when the model
provider fails. It starts the fault-injecting mock provider in this process,
spawns this rebound binary as an ACP agent over pipes, as an editor does, and
plays a scripted conversation against it that meets the faults users hit: a
429 with Retry-After, a dropped stream, a stream that drops after a tool has
run, a stalled stream, an overloaded model with fallback, a truncated reply,
and a cancel during a retry wait. The session works in a small project the
demo writes to a new temporary directory and removes at the end.

It prints what an editor user would see: each prompt ("› you: ..."), every
retry wait (on a terminal a live line with a countdown, replaced in place;
otherwise one plain line per event), each reply as the editor gets it
("rebound: ..."), and each tool call, by the title an editor shows, with
its final status ("⚙ TITLE · completed"). When the agent asks permission
for an edit or a command, the demo answers "allow once" for you and says
so. Colour only on a terminal, and not when NO_COLOR is set.

--streaming sets the agent's agent.streaming (REBOUND_STREAMING). live, the
default: a reply shows as it streams, and when a retry interrupts it (the
stream dropped or stalled after text was shown, or the reply was cut at
the output limit) the retry goes on from the text shown, and so does the
reply. On a terminal the rest follows on the same line, with the countdown
below it meanwhile and the retry noted under it afterwards; otherwise the
reply's line ends with "…", the retry's lines follow, and the rest is on a
line that starts with "…". held: a reply shows once it has finished, so a
failed attempt shows nothing.

It ends with a summary: the faults met, the attempts made, the tool calls
run, the time spent waiting; live, the characters shown before an attempt
failed or was cut, which the next went on from instead of sending them
again; held, the characters of failed or discarded attempts held back; in
both, the characters the editor was shown that no committed reply holds
(0: the editor's text is never taken back); and where the session log is.

--script FILE plays your own faults instead. FILE is JSON, either

  a mock script, {"steps": [STEP, ...], "fallback": STEP} (the format of
  'rebound mock-provider', docs/mock-provider.md): prompts are sent one at a
  time until every step has answered a request; or

  a demo definition ('rebound demo --print-default' prints the built-in one):
    {
      "model": "gpt-4o",                  optional: the agent's provider.model
      "recovery": {"initial_delay": "1s", "stream_idle_timeout": "2s", ...},
                                          optional: the agent's [recovery] config,
                                          keys as in the README; nested objects
                                          are sub-tables ({"truncation": {...}});
                                          {} for the agent's own defaults
      "project": {"README.md": "# Hello\n", "src/main.go": "..."},
                                          optional: the files of the project the
                                          session works in (its cwd: a new
                                          temporary directory, removed at the
                                          end); {} for an empty one
      "scenes": [{
        "title": "Rate limited",
        "note": "what to look for",       optional
        "prompt": "Summarise the README",
        "steps": [{"status": 429, "headers": {"Retry-After": "1"}},
                  {"text": "Reading it.", "tool_calls": [{"id": "call_1",
                   "name": "read_file", "arguments": "{\"path\": \"README.md\"}"}]},
                  {"text": "Done.", "chunks": 2}],
        "cancel_after": "1.5s",           optional: press stop this long after
                                          the turn's first retry is scheduled
        "expect": "end_turn"              optional: end_turn, cancelled,
                                          max_tokens, refusal or error
      }],
      "fallback": STEP                    optional: answers requests after all steps
    }
  The scenes' steps form one mock script, in order; each scene must use its
  own steps, no more and no fewer (else the demo stops and says so); a reply
  with tool calls is followed by another request, so it needs a step after
  it. Without "model", "recovery" or "project", and for a plain mock script,
  the agent gets the built-in demo's (no jitter, 1s initial delay, 2s
  stream_idle_timeout, fallback_model gpt-4o-mini after 2 overloads; a
  README.md).

--fast scales every wait by 1/10 (Retry-After, sent as retry-after-ms; the
mock's delays; the recovery durations; cancel_after), for CI: the built-in
demo then takes a second or two.

The agent runs with OPENAI_BASE_URL set to the mock, a dummy OPENAI_API_KEY,
REBOUND_STATE_DIR set to --state-dir (default: a new temporary directory,
kept, so the session log can be read afterwards) and REBOUND_CONFIG set to a
generated config file. REBOUND_DEMO_CHILD names another rebound binary to run
as the agent.

Exit status: 0 when every scene ended as expected, 1 when one did not, the
agent died, the script is bad or the timeout passed, 2 for a usage error.

Flags:
`

// runDemo parses the demo's flags and plays it (package demo).
func runDemo(ctx context.Context, args []string, s streams, e env) int {
	fs := flag.NewFlagSet("rebound demo", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), demoUsage)
		fs.PrintDefaults()
	}
	fast := fs.Bool("fast", false, "scale every wait by 1/10, for CI")
	scriptPath := fs.String("script", "", "play `FILE`, a demo definition or a mock script (JSON), instead of the built-in demo")
	stateDir := fs.String("state-dir", "", "`DIR` for the agent's session logs (default: a new temporary directory, kept)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	printDefault := fs.Bool("print-default", false, "print the built-in demo definition and exit")
	streaming := fs.String("streaming", config.StreamingLive, "the agent's `MODE`: live (replies show as they stream) or held (a reply shows once it has finished)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(s.err, "rebound demo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *streaming != config.StreamingLive && *streaming != config.StreamingHeld {
		fmt.Fprintf(s.err, "rebound demo: --streaming: want live or held, got %q\n", *streaming)
		fs.Usage()
		return 2
	}
	if *printDefault {
		if _, err := s.out.Write(demo.DefaultDefinition()); err != nil {
			return 1
		}
		return 0
	}
	ctx, cancel := context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("the demo did not finish within --timeout %s", *timeout))
	defer cancel()
	_, inspectHint := commands["inspect"]
	return demo.Run(ctx, demo.Options{
		Fast:          *fast,
		Streaming:     *streaming,
		Script:        *scriptPath,
		StateDir:      *stateDir,
		Getenv:        e.getenv,
		Home:          e.home,
		ClientVersion: version(),
		InspectHint:   inspectHint,
		Self:          os.Args[0],
	}, s.out, s.err)
}
