package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rebound-agent/rebound/agent/llm/mockprovider"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/session"
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

// demoCancelGrace is how long the agent may take to exit once its stdin is
// closed before it is killed.
const demoCancelGrace = 5 * time.Second

func runDemo(ctx context.Context, args []string, s streams, e env) int {
	if e.getenv == nil {
		e.getenv = func(string) string { return "" }
	}
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
		if _, err := s.out.Write(demoDefaultJSON); err != nil {
			return 1
		}
		return 0
	}

	fail := func(format string, args ...any) int {
		fmt.Fprintf(s.err, "rebound demo: "+format+"\n", args...)
		return 1
	}

	var def *demoDef
	var err error
	source := "built-in demo"
	if *scriptPath == "" {
		def, err = parseDemoDef(demoDefaultJSON)
	} else {
		var data []byte
		if data, err = os.ReadFile(*scriptPath); err == nil {
			def, err = parseDemoFile(data)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", *scriptPath, err)
		}
		source = *scriptPath
	}
	if err != nil {
		return fail("%v", err)
	}
	if *fast {
		def.scale(demoFastScale)
	}

	child := e.getenv("REBOUND_DEMO_CHILD")
	if child == "" {
		if child, err = os.Executable(); err != nil {
			return fail("cannot find the rebound binary to run as the agent: %v (set REBOUND_DEMO_CHILD)", err)
		}
		if strings.HasSuffix(strings.TrimSuffix(filepath.Base(child), ".exe"), ".test") {
			return fail("running inside a test binary (%s); set REBOUND_DEMO_CHILD to a rebound binary", child)
		}
	}

	ctx, cancel := context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("the demo did not finish within --timeout %s", *timeout))
	defer cancel()

	// The state directory is kept: the summary points at the session log.
	state := *stateDir
	var sessionID string
	if state == "" {
		if state, err = os.MkdirTemp("", "rebound-demo-"); err != nil {
			return fail("%v", err)
		}
		// Kept once a session has started; a demo that failed before
		// leaves nothing behind.
		defer func() {
			if sessionID == "" {
				os.RemoveAll(state)
			}
		}()
	} else {
		if state, err = filepath.Abs(state); err == nil {
			err = os.MkdirAll(state, 0o700)
		}
		if err != nil {
			return fail("--state-dir: %v", err)
		}
	}
	cfgDir, err := os.MkdirTemp("", "rebound-demo-config-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(cfgDir)
	cfgText, err := def.configTOML()
	if err != nil {
		return fail("%s: %v", source, err)
	}
	cfgPath := filepath.Join(cfgDir, "config.toml")
	if err := os.WriteFile(cfgPath, cfgText, 0o600); err != nil {
		return fail("%v", err)
	}

	// The session works in a project of its own, so that a script's edits
	// and commands never touch the directory the demo was started in.
	project, err := os.MkdirTemp("", "rebound-demo-project-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(project)
	if real, err := filepath.EvalSymlinks(project); err == nil {
		project = real
	}
	if err := def.writeProject(project); err != nil {
		return fail("writing the demo project: %v", err)
	}

	script := def.script()
	mock := mockprovider.New(script)
	srv, err := mockprovider.Serve(ctx, "127.0.0.1:0", mock)
	if err != nil {
		return fail("starting the mock provider: %v", err)
	}
	defer srv.Close()

	childEnv := map[string]string{
		"OPENAI_BASE_URL":   srv.BaseURL(),
		"OPENAI_API_KEY":    "demo-key-not-a-secret",
		"REBOUND_STATE_DIR": state,
		"REBOUND_CONFIG":    cfgPath,
		"REBOUND_LOG_LEVEL": "info",
		"REBOUND_STREAMING": *streaming,
	}
	if e.home != "" {
		childEnv["HOME"] = e.home
	}
	// Check the config here, so that a bad "recovery" reads as the script's
	// fault and not as an agent that died.
	cfg, err := config.Load(config.Flags{}, func(k string) string { return childEnv[k] }, e.home)
	if err != nil {
		return fail("%s: the agent's config (from \"recovery\"/\"model\"): %v", source, err)
	}
	var envList []string
	for k, v := range childEnv {
		envList = append(envList, k+"="+v)
	}

	agent, err := startDemoAgent(ctx, child, envList)
	if err != nil {
		return fail("starting the agent %s: %v", child, err)
	}
	defer agent.stop(demoCancelGrace)

	out := &demoOut{w: s.out}
	out.tty = demoIsTerminal(s.out) && e.getenv("TERM") != "dumb"
	out.color = out.tty && e.getenv("NO_COLOR") == ""
	d := &demoDriver{out: out, agent: agent, mock: mock, def: def, cwd: project, streaming: *streaming,
		shown: map[string]string{}, shownThought: map[string]string{}}

	agentFailed := func(err error) int {
		out.clearLive()
		out.endReply()
		if ctx.Err() != nil {
			// Interrupted or out of time: the agent's exit, if any, is ours
			// (a terminal's Ctrl-C reaches it too).
			if cause := context.Cause(ctx); errors.Is(cause, context.Canceled) {
				fmt.Fprintln(s.err, "rebound demo: interrupted")
			} else {
				fmt.Fprintf(s.err, "rebound demo: %v\n", cause)
			}
			return 1
		}
		if errors.Is(err, errAgentExited) {
			agent.stop(demoCancelGrace)
			fmt.Fprintf(s.err, "rebound demo: the agent exited unexpectedly (%v)\n", agent.waitErr)
		} else {
			fmt.Fprintf(s.err, "rebound demo: %v\n", err)
		}
		if tail := agent.stderr.lastLines(15); tail != "" {
			fmt.Fprintf(s.err, "the agent's last log lines:\n%s\n", tail)
		}
		return 1
	}

	info, err := d.open(ctx)
	if err != nil {
		return agentFailed(err)
	}
	sessionID = d.sessionID

	scenes := demoCount(len(def.Scenes), "scene")
	if def.plain {
		scenes = fmt.Sprintf("a mock script of %d steps", len(script.Steps))
	}
	out.line("%s %s against the fault-injecting mock provider, offline.", out.c(demoBold, "Rebound demo:"), scenes)
	out.line(out.c(demoDim, "  agent     %s %s (pid %d), spawned over pipes as an editor would"), info.AgentInfo.Name, info.AgentInfo.Version, agent.cmd.Process.Pid)
	out.line(out.c(demoDim, "  provider  %s (mock, in this process) · model %s"), srv.BaseURL(), cfg.Provider.Model)
	if *streaming == config.StreamingLive {
		out.line("%s", out.c(demoDim, "  streaming live: replies show as they stream (--streaming held: once finished)"))
	} else {
		out.line("%s", out.c(demoDim, "  streaming held: a reply shows once it has finished (--streaming live: as it streams)"))
	}
	if *fast {
		out.line(out.c(demoDim, "  waits     scaled by %g (--fast)"), demoFastScale)
	}
	out.line(out.c(demoDim, "  script    %s"), source)
	out.line(out.c(demoDim, "  project   %s (%s), the session's cwd; removed at the end"), project, demoFileList(def.Project))

	ok, err := d.play(ctx)
	if err != nil {
		return agentFailed(err)
	}
	agent.stop(demoCancelGrace)
	out.clearLive()

	logPath := filepath.Join(state, "sessions", d.sessionID+".jsonl")
	ld, err := session.Load(logPath)
	if err != nil {
		return fail("reading the session log: %v", err)
	}
	stats, err := demoAnalyse(ld.Events)
	if err != nil {
		return fail("reading the session log %s: %v", logPath, err)
	}
	d.summary(stats, logPath)
	if out.err != nil {
		fmt.Fprintf(s.err, "rebound demo: writing to stdout: %v\n", out.err)
		return 1
	}
	if !ok {
		fmt.Fprintln(s.err, "rebound demo: not every scene ended as expected (see above)")
		return 1
	}
	return 0
}

// demoDriver is the editor side of the demo.
type demoDriver struct {
	out       *demoOut
	agent     *demoAgent
	mock      *mockprovider.Mock
	def       *demoDef
	cwd       string // the session's working directory: the demo project
	streaming string // the agent's mode: live or held
	sessionID string

	// What the editor was sent, by messageId: agent_message_chunk and
	// agent_thought_chunk text, in order.
	shown, shownThought map[string]string
	shownOrder          []string
	prompts             int
	asExpected          int
	expected            int
}

type demoInitResult struct {
	AgentInfo struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"agentInfo"`
}

// open initializes ACP, advertising notices as a capable editor does, and
// starts a session.
func (d *demoDriver) open(ctx context.Context) (demoInitResult, error) {
	var info demoInitResult
	err := d.agent.call(ctx, "initialize", map[string]any{
		"protocolVersion": 1,
		"clientCapabilities": map[string]any{
			"fs":       map[string]any{"readTextFile": false, "writeTextFile": false},
			"terminal": false,
			"session":  map[string]any{"notices": map[string]any{}},
		},
		"clientInfo": map[string]any{"name": "rebound-demo", "version": version()},
	}, &info)
	if err != nil {
		return info, err
	}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := d.agent.call(ctx, "session/new", map[string]any{"cwd": d.cwd, "mcpServers": []any{}}, &sess); err != nil {
		return info, err
	}
	if sess.SessionID == "" {
		return info, errors.New("session/new: no sessionId in the answer")
	}
	d.sessionID = sess.SessionID
	return info, nil
}

// play runs every scene; ok is false when one did not end as expected. An
// error means the demo cannot go on (the agent died, the timeout passed,
// the scenes and the agent's requests went out of step).
func (d *demoDriver) play(ctx context.Context) (ok bool, err error) {
	ok = true
	if d.def.plain {
		steps := d.def.script().Steps
		for i := 0; i == 0 || (d.mock.Count() < len(steps) && i < len(steps)); i++ {
			sc := demoScene{Title: fmt.Sprintf("Prompt %d", i+1), Prompt: fmt.Sprintf("Hello (prompt %d)", i+1)}
			if _, err := d.scene(ctx, i, 0, sc); err != nil {
				return false, err
			}
		}
		return true, nil
	}
	total := len(d.def.script().Steps)
	used := 0
	for i, sc := range d.def.Scenes {
		good, err := d.scene(ctx, i, len(d.def.Scenes), sc)
		if err != nil {
			return false, err
		}
		ok = ok && good
		used += len(sc.Steps)
		n := d.mock.Count()
		if (used < total && n != used) || n < used {
			return false, fmt.Errorf("scene %d (%s) made %d provider requests but has %d steps: the following scenes would get the wrong answers; give each scene exactly the steps its prompt uses (is recovery.max_retries right?)",
				i+1, sc.Title, n-(used-len(sc.Steps)), len(sc.Steps))
		}
	}
	return ok, nil
}

// scene sends one prompt and shows what the editor user sees until the
// agent answers it.
func (d *demoDriver) scene(ctx context.Context, i, of int, sc demoScene) (asExpected bool, err error) {
	o := d.out
	o.line("")
	if of > 0 {
		o.line("%s %s", o.c(demoBold, fmt.Sprintf("[%d/%d]", i+1, of)), o.c(demoBold, sc.Title))
	} else {
		o.line("%s", o.c(demoBold, sc.Title))
	}
	if sc.Note != "" {
		o.line("      %s", o.c(demoDim, sc.Note))
	}
	before := d.mock.Count()
	start := time.Now()
	id, err := d.agent.request("session/prompt", map[string]any{
		"sessionId": d.sessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": sc.Prompt}},
	})
	if err != nil {
		return false, d.agent.writeError("session/prompt", err)
	}
	d.prompts++
	o.line("%s %s", o.c(demoBoldCy, "› you:"), sc.Prompt)

	var (
		wait       *demoWait
		busySince  = start // the spinner counts from here when no wait is live
		cancelC    <-chan time.Time
		cancelSent bool
		tick       <-chan time.Time
		tools      = map[string]*demoTool{}
		toolOrder  []string
		running    *demoTool // the tool call in flight, for the live line
	)
	if o.tty {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	render := func(now time.Time) {
		if wait != nil {
			o.setLive(demoYellow, "  ↻ "+wait.text(wait.scheduledTiming(now)))
			return
		}
		if running != nil {
			o.setLive(demoDim, "  ⚙ "+running.title+" · "+strings.ReplaceAll(running.status, "_", " ")+" · "+demoSeconds(now.Sub(running.at)))
			return
		}
		o.setLive(demoDim, "  … waiting for the provider · "+demoSeconds(now.Sub(busySince)))
	}
	tool := func(id string, now time.Time) *demoTool {
		t := tools[id]
		if t == nil {
			t = &demoTool{title: "a tool call", status: "pending", at: now}
			tools[id] = t
			toolOrder = append(toolOrder, id)
		}
		return t
	}

	for {
		var m demoMsg
		var open bool
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case now := <-tick:
			render(now)
			continue
		case <-cancelC:
			cancelC = nil
			if err := d.agent.send(-1, "session/cancel", map[string]any{"sessionId": d.sessionID}); err != nil {
				return false, d.agent.writeError("session/cancel", err)
			}
			cancelSent = true
			o.line("%s %s", o.c(demoBoldCy, "› you:"), o.c(demoCyan, "■ stop (session/cancel)"))
			continue
		case m, open = <-d.agent.msgs:
		}
		if !open {
			return false, errAgentExited
		}
		now := time.Now()
		switch {
		case m.bad != "":
			return false, fmt.Errorf("the agent wrote a line that is not JSON-RPC: %q", m.bad)
		case m.isResponse(id):
			// A tool call the agent never finished still gets its line.
			for _, tid := range toolOrder {
				if t := tools[tid]; !t.done {
					o.line("%s", d.toolLine(t))
				}
			}
			return d.finish(sc, m, before, len(toolOrder), now.Sub(start), cancelSent), nil
		case m.Method != "" && len(m.ID) > 0:
			if m.Method == "session/request_permission" {
				var p demoPermissionRequest
				_ = json.Unmarshal(m.Params, &p)
				title := p.ToolCall.Title
				if t := tools[p.ToolCall.ToolCallID]; title == "" && t != nil {
					title = t.title
				}
				_, name := p.allowOnce()
				o.line("  %s %s · permission asked · %s", o.c(demoCyan, "?"), title, o.c(demoCyan, fmt.Sprintf("the demo answers %q for you", name)))
			}
			if _, err := d.agent.answer(m); err != nil {
				return false, d.agent.writeError(m.Method+" (the answer)", err)
			}
		case m.Method == "session/update":
			var p struct {
				Update struct {
					SessionUpdate string                     `json:"sessionUpdate"`
					MessageID     string                     `json:"messageId"`
					Content       json.RawMessage            `json:"content"` // a block for chunks, a list for tool calls
					ToolCallID    string                     `json:"toolCallId"`
					Title         string                     `json:"title"`
					Status        string                     `json:"status"`
					Meta          map[string]json.RawMessage `json:"_meta"`
				} `json:"update"`
			}
			if json.Unmarshal(m.Params, &p) != nil {
				continue
			}
			u := p.Update
			switch u.SessionUpdate {
			case "agent_message_chunk":
				var c struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}
				if json.Unmarshal(u.Content, &c) == nil && c.Type == "text" {
					d.received(u.MessageID, c.Text, "")
					o.replyText(u.MessageID, c.Text)
				}
			case "agent_thought_chunk":
				// Not printed, but counted: the editor was shown it.
				var c struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}
				if json.Unmarshal(u.Content, &c) == nil && c.Type == "text" {
					d.received(u.MessageID, "", c.Text)
				}
			case "tool_call", "tool_call_update":
				if u.ToolCallID == "" {
					continue
				}
				t := tool(u.ToolCallID, now)
				if u.Title != "" {
					t.title = u.Title
				}
				if u.Status != "" {
					t.status = u.Status
				}
				if len(u.Content) > 0 {
					t.content = demoToolContent(d.cwd, u.Content)
				}
				if t.done {
					continue
				}
				switch t.status {
				case "completed", "failed":
					t.done = true
					o.line("%s", d.toolLine(t))
					if running == t {
						running = nil
					}
					busySince = now
				default:
					running = t
					if o.tty {
						render(now)
					}
				}
			case "session_info_update":
				raw, ok := u.Meta["rebound/retry"]
				if !ok {
					continue
				}
				var r demoRetryMeta
				if json.Unmarshal(raw, &r) != nil {
					continue
				}
				switch r.Phase {
				case "scheduled":
					wait = &demoWait{p: r, at: now}
					o.interrupt() // a reply being printed goes on after the retry
					if o.tty {
						render(now)
					} else {
						o.line("%s", "  ↻ "+wait.text(wait.scheduledTiming(now)))
					}
					if sc.cancelAfter > 0 && !cancelSent && cancelC == nil {
						cancelC = time.After(sc.cancelAfter)
					}
				case "started":
					if wait != nil {
						waited := now.Sub(wait.at)
						timing := ""
						if wait.p.DelayMs > 0 {
							timing = "retried after " + demoSeconds(waited)
						}
						switch {
						case o.tty && o.note(wait.text(timing)):
							// Printed under the reply once it has gone on.
						case o.tty:
							o.line("%s", o.c(demoYellow, "  ↻ "+wait.text(timing)))
						case wait.p.DelayMs > 0 && o.cut:
							o.line("  ↻ waited %s, retrying from where the reply stopped", demoSeconds(waited))
						case wait.p.DelayMs > 0:
							o.line("  ↻ waited %s, retrying", demoSeconds(waited))
						}
					}
					wait, busySince = nil, now
				case "cancelled":
					if wait != nil {
						o.line("%s", o.c(demoRed, fmt.Sprintf("  ✗ %s · wait cancelled after %s · no further request", demoFailureSummary(wait.p), demoSeconds(now.Sub(wait.at)))))
					} else {
						o.line("%s", o.c(demoRed, "  ✗ retry cancelled; no further request"))
					}
					wait = nil
				case "exhausted":
					msg := "recovery gave up"
					if r.Failure != nil {
						msg += ": " + demoFailureSummary(r)
					}
					o.line("%s", o.c(demoRed, "  ✗ "+msg))
					wait = nil
				}
			}
		}
	}
}

// finish shows the turn's outcome and says whether it was the expected one.
func (d *demoDriver) finish(sc demoScene, m demoMsg, before, toolCalls int, took time.Duration, cancelSent bool) bool {
	o := d.out
	o.clearLive()
	o.endReply()
	o.cut, o.replyID = false, "" // the turn's replies can go on no more
	outcome := ""
	if m.Error != nil {
		outcome = "error"
		o.line("%s %s", o.c(demoBoldGr, "rebound:"), o.c(demoRed, "✗ "+m.Error.Message))
	} else {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		_ = json.Unmarshal(m.Result, &r)
		outcome = r.StopReason
		if outcome == "" {
			outcome = "(no stop reason)"
		}
	}
	requests := d.mock.Count() - before
	plural := "s"
	if requests == 1 {
		plural = ""
	}
	facts := fmt.Sprintf("%s · %d provider request%s", outcome, requests, plural)
	if toolCalls > 0 {
		facts += " · " + demoCount(toolCalls, "tool call")
	}
	facts += " · " + demoSeconds(took)
	if sc.Expect == "" {
		o.line("  %s", o.c(demoDim, "· "+facts))
		return true
	}
	d.expected++
	if outcome != sc.Expect {
		o.line("%s", o.c(demoRed, fmt.Sprintf("  ✗ %s (expected %s)", facts, sc.Expect)))
		return false
	}
	d.asExpected++
	o.line("%s", o.c(demoGreen, "  ✓ "+facts))
	return true
}

// received records text the editor was sent for a message.
func (d *demoDriver) received(id, text, thought string) {
	if _, seen := d.shown[id]; !seen {
		d.shownOrder = append(d.shownOrder, id)
	}
	d.shown[id] += text
	d.shownThought[id] += thought
}

// summary prints the closing table.
func (d *demoDriver) summary(st *demoLogStats, logPath string) {
	o := d.out
	row := func(k, format string, args ...any) {
		o.line("  %-22s %s", k, fmt.Sprintf(format, args...))
	}
	o.line("")
	o.line("%s", o.c(demoBold, "Summary"))
	if d.expected > 0 {
		row("scenes", "%d of %d as expected", d.asExpected, d.expected)
	}
	row("faults met", "%d (%s)", st.faultTotal(), st.faultList())
	prompts := "prompts"
	if d.prompts == 1 {
		prompts = "prompt"
	}
	row("attempts made", "%d (%d provider requests for %d %s)", st.attempts, d.mock.Count(), d.prompts, prompts)
	row("tool calls run", "%s", st.toolList())
	if st.permissions > 0 {
		row("permission asked", "%s, answered by the demo: %s", demoCount(st.permissions, "time"), st.permissionList())
	}
	row("time spent waiting", "%s", demoSeconds(st.waited))
	if d.streaming == config.StreamingHeld {
		row("held back", "%d characters of failed or discarded attempts' text, never shown", st.heldBack)
	} else {
		row("continued, not resent", "%d characters shown before an attempt failed or was cut; the next went on from them", st.continued)
		if st.incomplete > 0 {
			row("kept, incomplete", "%d characters of replies whose recovery failed or was cancelled, committed as shown", st.incomplete)
		}
	}
	// What the editor was shown that no committed message holds: none, in
	// either mode.
	discarded := 0
	for _, id := range d.shownOrder {
		discarded += demoDiscarded(d.shown[id], st.committed[id]) + demoDiscarded(d.shownThought[id], st.committedThought[id])
	}
	if discarded == 0 {
		row("shown, then discarded", "%s: every character the editor showed is in a committed reply", o.c(demoGreen, "0 characters"))
	} else {
		row("shown, then discarded", "%s the editor showed that no committed reply holds", o.c(demoRed, demoCount(discarded, "character")))
	}
	row("session log", "%s", logPath)
	if _, ok := commands["inspect"]; ok {
		o.line("  %-22s %s", "", o.c(demoDim, "rebound inspect "+logPath+" shows its timeline"))
	}
}

// demoTool is a tool call as the editor shows it.
type demoTool struct {
	title, status string
	content       string    // what it showed, in a few words
	at            time.Time // announced
	done          bool      // completed or failed: its line is printed
}

// toolLine is a tool call's line: its title, its status and what it
// showed, e.g. "⚙ Read `README.md` · completed · Read README.md (412 bytes)".
func (d *demoDriver) toolLine(t *demoTool) string {
	o := d.out
	status := t.status
	switch status {
	case "completed":
		status = o.c(demoGreen, status)
	case "failed":
		status = o.c(demoRed, status)
	default:
		status += " (never finished)"
	}
	line := "  " + o.c(demoCyan, "⚙") + " " + t.title + " · " + status
	if t.content != "" {
		line += " · " + o.c(demoDim, t.content)
	}
	return line
}

// demoToolContent is a tool call's content in a few words: its text (the
// first line, shortened), "diff of PATH" or "terminal".
func demoToolContent(cwd string, raw json.RawMessage) string {
	var list []struct {
		Type    string `json:"type"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &list) != nil {
		return ""
	}
	var parts []string
	for _, c := range list {
		switch c.Type {
		case "content":
			if c.Content.Type == "text" {
				// The first line that is not a code fence (command
				// output comes fenced).
				var lines []string
				for l := range strings.Lines(c.Content.Text) {
					if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "```") {
						lines = append(lines, l)
					}
				}
				if len(lines) == 0 {
					continue
				}
				text, cut := lines[0], len(lines) > 1
				if r := []rune(text); len(r) > 100 {
					text, cut = string(r[:100]), true
				}
				if cut {
					text += " …"
				}
				parts = append(parts, text)
			}
		case "diff":
			path := c.Path
			if rel, err := filepath.Rel(cwd, path); err == nil && filepath.IsLocal(rel) {
				path = filepath.ToSlash(rel)
			}
			parts = append(parts, "diff of "+path)
		case "terminal":
			parts = append(parts, "terminal")
		}
	}
	return strings.Join(parts, "; ")
}

// demoFileList names a project's files: "README.md, main.go", or "empty".
func demoFileList(files map[string]string) string {
	if len(files) == 0 {
		return "empty"
	}
	return strings.Join(slices.Sorted(maps.Keys(files)), ", ")
}

// demoCount is "1 tool call", "2 tool calls".
func demoCount(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
