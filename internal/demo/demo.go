// Package demo plays `rebound demo`: a scripted conversation with a rebound
// agent, spawned over pipes as an editor spawns it, against the
// fault-injecting mock provider running in this process. It prints what an
// editor user would see (prompts, retry waits, replies, tool calls) and ends
// with a summary read from the session log's timeline (package inspect).
//
// The demo is an ACP client built on the same pieces as the agent: the
// wire types of package acp over a sourcegraph/jsonrpc2 connection, the
// retry progress the agent sends (recovery.RetryProgress, whose failure facts
// are recovery.Failure), and the timeline of package inspect.
package demo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/config"
	"github.com/rebound-agent/rebound/llm/mockprovider"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// Options are what `rebound demo` was asked to do.
type Options struct {
	// Fast scales every wait by 1/10.
	Fast bool
	// Streaming is the agent's agent.streaming: config.StreamingLive
	// (the default when empty) or config.StreamingHeld.
	Streaming string
	// Script is a demo definition or a mock script (JSON) to play instead
	// of the built-in demo.
	Script string
	// StateDir is where the agent keeps its session logs; empty: a new
	// temporary directory, kept.
	StateDir string
	// Getenv reads the demo's environment: REBOUND_DEMO_CHILD (the rebound
	// binary to run as the agent; default: this executable), TERM and
	// NO_COLOR. nil reads nothing.
	Getenv func(string) string
	// Home is the agent's HOME, when set.
	Home string
	// ClientVersion is the version the demo gives in clientInfo.
	ClientVersion string
	// InspectHint adds to the summary the `rebound inspect` command that
	// shows the session log's timeline.
	InspectHint bool
	// Self is the command that ran the demo, as typed (os.Args[0]), which
	// the hint names: rebound may not be installed. Empty: "rebound".
	Self string
}

// cancelGrace is how long the agent may take to exit once its stdin is
// closed before it is killed.
const cancelGrace = 5 * time.Second

// Run plays the demo, writing what the editor user sees to stdout and what
// went wrong to stderr. It returns the exit status: 0 when every scene
// ended as expected, 1 when one did not, the agent died, the script is bad
// or ctx ended (its cause is reported: `rebound demo --timeout` sets it).
func Run(ctx context.Context, opts Options, stdout, stderr io.Writer) int {
	opts = opts.withDefaults()
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "rebound demo: "+format+"\n", args...)
		return 1
	}

	def, source, err := loadDefinition(opts)
	if err != nil {
		return fail("%v", err)
	}
	child, err := childBinary(opts.Getenv)
	if err != nil {
		return fail("%v", err)
	}
	ws, err := newWorkspace(opts.StateDir, def, source)
	if err != nil {
		return fail("%v", err)
	}
	defer ws.remove()

	script := def.script()
	mock := mockprovider.New(script)
	srv, err := mockprovider.Serve(ctx, "127.0.0.1:0", mock)
	if err != nil {
		return fail("starting the mock provider: %v", err)
	}
	defer srv.Close()

	env := ws.agentEnv(srv.BaseURL(), opts)
	// Check the config here, so that a bad "recovery" reads as the script's
	// fault and not as an agent that died.
	cfg, err := config.Load(config.Flags{}, func(k string) string { return env[k] }, opts.Home)
	if err != nil {
		return fail("%s: the agent's config (from \"recovery\"/\"model\"): %v", source, err)
	}
	proc, err := startAgent(ctx, child, envList(env))
	if err != nil {
		return fail("starting the agent %s: %v", child, err)
	}
	defer proc.stop(cancelGrace)

	out := newScreen(stdout, opts.Getenv)
	d := &driver{out: out, client: proc.client, mock: mock, def: def, cwd: ws.project, streaming: opts.Streaming, state: ws.state,
		clientVersion: opts.ClientVersion,
		shown:         map[string]string{}, shownThought: map[string]string{}}

	info, err := d.open(ctx)
	if err != nil {
		return agentFailed(ctx, stderr, out, proc, err)
	}
	ws.keepState = true

	d.header(info, proc, banner{source: source, steps: len(script.Steps), provider: srv.BaseURL(), model: cfg.Provider.Model, fast: opts.Fast})
	ok, err := d.play(ctx)
	if err != nil {
		return agentFailed(ctx, stderr, out, proc, err)
	}
	proc.stop(cancelGrace)
	out.clearLive()
	if err := d.conclude(opts, ok); err != nil {
		return fail("%v", err)
	}
	return 0
}

// withDefaults fills in what an empty Options field means.
func (opts Options) withDefaults() Options {
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	opts.Streaming = cmp.Or(opts.Streaming, config.StreamingLive)
	return opts
}

// conclude prints the summary once the agent has stopped, and says what
// made the demo fail: its output, or a scene that did not end as expected.
func (d *driver) conclude(opts Options, ok bool) error {
	hint := ""
	if opts.InspectHint {
		hint = cmp.Or(shellWord(opts.Self), "rebound")
	}
	if err := d.summarise(hint); err != nil {
		return err
	}
	if d.out.err != nil {
		return fmt.Errorf("writing to stdout: %v", d.out.err)
	}
	if !ok {
		return errors.New("not every scene ended as expected (see above)")
	}
	return nil
}

// summarise prints the summary read from the session log.
// self, when not empty, is the command the hints name.
func (d *driver) summarise(self string) error {
	logPath := d.logPath()
	ld, err := session.Load(logPath)
	if err != nil {
		return fmt.Errorf("reading the session log: %v", err)
	}
	stats, err := analyse(ld.Events)
	if err != nil {
		return fmt.Errorf("reading the session log %s: %v", logPath, err)
	}
	d.summary(stats, logPath, self)
	return nil
}

// loadDefinition reads the demo to play, scaled for --fast, and names where
// it came from.
func loadDefinition(opts Options) (def *definition, source string, err error) {
	source = "built-in demo"
	if opts.Script == "" {
		def, err = parseDefinition(defaultJSON)
	} else {
		var data []byte
		if data, err = os.ReadFile(opts.Script); err == nil {
			def, err = parseFile(data)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", opts.Script, err)
		}
		source = opts.Script
	}
	if err != nil {
		return nil, "", err
	}
	if opts.Fast {
		def.scale(fastScale)
	}
	return def, source, nil
}

// childBinary is the rebound binary to run as the agent.
func childBinary(getenv func(string) string) (string, error) {
	if child := getenv("REBOUND_DEMO_CHILD"); child != "" {
		return child, nil
	}
	child, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the rebound binary to run as the agent: %v (set REBOUND_DEMO_CHILD)", err)
	}
	if strings.HasSuffix(strings.TrimSuffix(filepath.Base(child), ".exe"), ".test") {
		return "", fmt.Errorf("running inside a test binary (%s); set REBOUND_DEMO_CHILD to a rebound binary", child)
	}
	return child, nil
}

// agentFailed reports an agent that could not be talked to, and returns
// the demo's exit status.
func agentFailed(ctx context.Context, stderr io.Writer, out *screen, proc *process, err error) int {
	out.clearLive()
	out.endReply()
	if ctx.Err() != nil {
		// Interrupted or out of time: the agent's exit, if any, is ours
		// (a terminal's Ctrl-C reaches it too).
		if cause := context.Cause(ctx); errors.Is(cause, context.Canceled) {
			fmt.Fprintln(stderr, "rebound demo: interrupted")
		} else {
			fmt.Fprintf(stderr, "rebound demo: %v\n", cause)
		}
		return 1
	}
	if errors.Is(err, errAgentExited) {
		proc.stop(cancelGrace)
		fmt.Fprintf(stderr, "rebound demo: the agent exited unexpectedly (%v)\n", proc.waitErr)
	} else {
		fmt.Fprintf(stderr, "rebound demo: %v\n", err)
	}
	if tail := proc.stderr.lastLines(15); tail != "" {
		fmt.Fprintf(stderr, "the agent's last log lines:\n%s\n", tail)
	}
	return 1
}

// banner is what the demo's header says besides the agent.
type banner struct {
	source          string // the script's path, or "built-in demo"
	steps           int    // the mock script's, for a plain script
	provider, model string
	fast            bool
}

// header prints what is playing: the agent, the provider, the streaming
// mode, the script and the project.
func (d *driver) header(info acp.InitializeResponse, proc *process, b banner) {
	out := d.out
	scenes := count(len(d.def.Scenes), "scene")
	if d.def.plain {
		scenes = fmt.Sprintf("a mock script of %d steps", b.steps)
	}
	var agentInfo acp.Implementation
	if info.AgentInfo != nil {
		agentInfo = *info.AgentInfo
	}
	out.line("%s %s against the fault-injecting mock provider, offline.", out.c(bold, "Rebound demo:"), scenes)
	out.line(out.c(dim, "  agent     %s %s (pid %d), spawned over pipes as an editor would"), agentInfo.Name, agentInfo.Version, proc.cmd.Process.Pid)
	out.line(out.c(dim, "  provider  %s (mock, in this process) · model %s"), b.provider, b.model)
	if d.streaming == config.StreamingLive {
		out.line("%s", out.c(dim, "  streaming live: replies show as they stream (--streaming held: once finished)"))
	} else {
		out.line("%s", out.c(dim, "  streaming held: a reply shows once it has finished (--streaming live: as it streams)"))
	}
	if b.fast {
		out.line(out.c(dim, "  waits     scaled by %g (--fast)"), fastScale)
	}
	out.line(out.c(dim, "  script    %s"), b.source)
	out.line(out.c(dim, "  project   %s (%s), the session's cwd; removed at the end"), d.cwd, fileList(d.def.Project))
}

// driver is the editor side of the demo.
type driver struct {
	out           *screen
	client        *editor
	mock          *mockprovider.Mock
	def           *definition
	cwd           string // the session's working directory: the demo project
	streaming     string // the agent's mode: live or held
	state         string // the agent's state directory
	sessionID     string
	clientVersion string

	// What the editor was sent, by messageId: agent_message_chunk and
	// agent_thought_chunk text, in order.
	shown, shownThought map[string]string
	shownOrder          []string
	prompts             int
	asExpected          int
	expected            int
}

// logPath is the session's log.
func (d *driver) logPath() string { return session.Path(d.state, d.sessionID) }

// open initializes ACP, advertising notices as a capable editor does, and
// starts a session.
func (d *driver) open(ctx context.Context) (acp.InitializeResponse, error) {
	var info acp.InitializeResponse
	err := d.client.call(ctx, acp.MethodInitialize, acp.InitializeRequest{
		ProtocolVersion: acp.ProtocolVersion,
		ClientCapabilities: acp.ClientCapabilities{
			Session: &acp.ClientSessionCapabilities{Notices: json.RawMessage("{}")},
		},
		ClientInfo: &acp.Implementation{Name: "rebound-demo", Version: d.clientVersion},
	}, &info)
	if err != nil {
		return info, err
	}
	var sess acp.NewSessionResponse
	if err := d.client.call(ctx, acp.MethodSessionNew, acp.NewSessionRequest{Cwd: d.cwd, McpServers: []acp.McpServer{}}, &sess); err != nil {
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
func (d *driver) play(ctx context.Context) (ok bool, err error) {
	ok = true
	if d.def.plain {
		steps := d.def.script().Steps
		for i := 0; i == 0 || (d.mock.Count() < len(steps) && i < len(steps)); i++ {
			sc := scene{Title: fmt.Sprintf("Prompt %d", i+1), Prompt: fmt.Sprintf("Hello (prompt %d)", i+1)}
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
func (d *driver) scene(ctx context.Context, i, of int, sc scene) (asExpected bool, err error) {
	d.sceneHeading(i, of, sc)
	before := d.mock.Count()
	start := time.Now()
	if err := d.prompt(sc.Prompt); err != nil {
		return false, err
	}
	sv := &sceneView{d: d, o: d.out, sc: sc, busySince: start, tools: map[string]*shownTool{}}
	tick, stop := d.out.ticker()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case now := <-tick:
			sv.render(now)
		case <-sv.cancelC:
			if err := sv.cancel(); err != nil {
				return false, err
			}
		case ev := <-d.client.events:
			now := time.Now()
			if ev.answer != nil {
				return sv.answered(ev.answer, before, now.Sub(start))
			}
			sv.show(ev, now)
		}
	}
}

// sceneHeading prints scene i's title ("[i/of] title" in a demo of
// scenes) and its note.
func (d *driver) sceneHeading(i, of int, sc scene) {
	o := d.out
	o.line("")
	if of > 0 {
		o.line("%s %s", o.c(bold, fmt.Sprintf("[%d/%d]", i+1, of)), o.c(bold, sc.Title))
	} else {
		o.line("%s", o.c(bold, sc.Title))
	}
	if sc.Note != "" {
		o.line("      %s", o.c(dim, sc.Note))
	}
}

// prompt sends session/prompt without waiting for its answer, and shows
// it as the user's line.
func (d *driver) prompt(text string) error {
	if err := d.client.send(acp.MethodSessionPrompt, acp.PromptRequest{
		SessionID: d.sessionID,
		Prompt:    []acp.ContentBlock{acp.TextBlock(text)},
	}); err != nil {
		return err
	}
	d.prompts++
	d.out.line("%s %s", d.out.c(boldCyan, "› you:"), text)
	return nil
}

// cancel sends session/cancel, as a user pressing stop does.
func (v *sceneView) cancel() error {
	v.cancelC = nil
	if err := v.d.client.notify(acp.MethodSessionCancel, acp.CancelNotification{SessionID: v.d.sessionID}); err != nil {
		return err
	}
	v.cancelSent = true
	v.o.line("%s %s", v.o.c(boldCyan, "› you:"), v.o.c(cyan, "■ stop (session/cancel)"))
	return nil
}

// answered ends the scene on the prompt's answer. An error that is not
// the agent's JSON-RPC error means the connection ended: the agent died.
func (v *sceneView) answered(a *answer, before int, took time.Duration) (asExpected bool, err error) {
	var rerr *jsonrpc2.Error
	if a.err != nil && !errors.As(a.err, &rerr) {
		return false, v.d.client.exitErr()
	}
	// A tool call the agent never finished still gets its line.
	for _, tid := range v.toolOrder {
		if t := v.tools[tid]; !t.done {
			v.o.line("%s", v.d.toolLine(t))
		}
	}
	return v.d.finish(v.sc, a.result, rerr, before, len(v.toolOrder), took), nil
}

// show shows an agent's request or update that is not the answer.
func (v *sceneView) show(ev event, now time.Time) {
	switch {
	case ev.permission != nil:
		v.permission(ev.permission, ev.chosen)
	case ev.update != nil:
		v.update(ev.update, now)
	}
}

// permission shows a permission request and the option the demo chose.
func (v *sceneView) permission(p *acp.RequestPermissionRequest, chosen acp.PermissionOption) {
	title := p.ToolCall.Title
	if t := v.tools[p.ToolCall.ToolCallID]; title == "" && t != nil {
		title = t.title
	}
	// A title may hold a whole command in a block: keep it under its line.
	title = strings.ReplaceAll(title, "\n", "\n    ")
	v.o.line("  %s %s · permission asked · %s", v.o.c(cyan, "?"), title, v.o.c(cyan, fmt.Sprintf("the demo answers %q for you", chosen.Name)))
}

// sceneView is what a scene shows while its prompt runs: the retry wait,
// the tool calls, and the live line that counts either.
type sceneView struct {
	d  *driver
	o  *screen
	sc scene

	wait       *retryWait
	busySince  time.Time // the spinner counts from here when no wait is live
	cancelC    <-chan time.Time
	cancelSent bool
	tools      map[string]*shownTool
	toolOrder  []string
	running    *shownTool // the tool call in flight, for the live line
}

// render redraws the live line.
func (v *sceneView) render(now time.Time) {
	o := v.o
	if v.wait != nil {
		o.setLive(yellow, "  ↻ "+v.wait.text(v.wait.scheduledTiming(now)))
		return
	}
	if v.running != nil {
		o.setLive(dim, "  ⚙ "+v.running.title+" · "+strings.ReplaceAll(v.running.status, "_", " ")+" · "+seconds(now.Sub(v.running.at)))
		return
	}
	o.setLive(dim, "  … waiting for the provider · "+seconds(now.Sub(v.busySince)))
}

// update shows one session update.
func (v *sceneView) update(u *acp.SessionUpdate, now time.Time) {
	switch u.SessionUpdate {
	case acp.UpdateAgentMessageChunk:
		if c := u.Content; c != nil && c.Type == "text" {
			v.d.received(u.MessageID, c.Text, "")
			v.o.replyText(u.MessageID, c.Text)
		}
	case acp.UpdateAgentThoughtChunk:
		// Not printed, but counted: the editor was shown it.
		if c := u.Content; c != nil && c.Type == "text" {
			v.d.received(u.MessageID, "", c.Text)
		}
	case acp.UpdateToolCall, acp.UpdateToolCallUpdate:
		if u.ToolCallID != "" {
			v.toolCall(u, now)
		}
	case acp.UpdateSessionInfo:
		if r, ok := retryProgress(u.Meta); ok {
			v.retry(r, now)
		}
	}
}

// toolCall shows a tool call once it has finished, and keeps the one in
// flight on the live line.
func (v *sceneView) toolCall(u *acp.SessionUpdate, now time.Time) {
	t := v.tools[u.ToolCallID]
	if t == nil {
		t = &shownTool{title: "a tool call", status: acp.ToolStatusPending, at: now}
		v.tools[u.ToolCallID] = t
		v.toolOrder = append(v.toolOrder, u.ToolCallID)
	}
	if u.Title != "" {
		t.title = u.Title
	}
	if u.Status != "" {
		t.status = u.Status
	}
	if u.ToolContent != nil {
		t.content = toolContent(v.d.cwd, u.ToolContent)
	}
	if t.done {
		return
	}
	switch t.status {
	case acp.ToolStatusCompleted, acp.ToolStatusFailed:
		t.done = true
		v.o.line("%s", v.d.toolLine(t))
		if v.running == t {
			v.running = nil
		}
		v.busySince = now
	default:
		v.running = t
		if v.o.tty {
			v.render(now)
		}
	}
}

// retry shows a retry's progress: the wait while it is scheduled, what it
// came to once it has started, been cancelled or given up.
func (v *sceneView) retry(r recovery.RetryProgress, now time.Time) {
	o := v.o
	switch r.Phase {
	case recovery.PhaseScheduled:
		v.wait = &retryWait{p: r, failure: failureWords(r), at: now}
		o.interrupt() // a reply being printed goes on after the retry
		if o.tty {
			v.render(now)
		} else {
			o.line("%s", "  ↻ "+v.wait.text(v.wait.scheduledTiming(now)))
		}
		if v.sc.cancelAfter > 0 && !v.cancelSent && v.cancelC == nil {
			v.cancelC = time.After(v.sc.cancelAfter)
		}
	case recovery.PhaseStarted:
		if v.wait != nil {
			v.retried(now)
		}
		v.wait, v.busySince = nil, now
	case recovery.PhaseCancelled:
		if v.wait != nil {
			o.line("%s", o.c(red, fmt.Sprintf("  ✗ %s · wait cancelled after %s · no further request", v.wait.failure, seconds(now.Sub(v.wait.at)))))
		} else {
			o.line("%s", o.c(red, "  ✗ retry cancelled; no further request"))
		}
		v.wait = nil
	case recovery.PhaseExhausted:
		msg := "recovery gave up"
		if r.Failure != nil {
			msg += ": " + failureWords(r)
		}
		o.line("%s", o.c(red, "  ✗ "+msg))
		v.wait = nil
	}
}

// retried shows how long the wait for a retry that has started was.
func (v *sceneView) retried(now time.Time) {
	o, wait := v.o, v.wait
	waited := now.Sub(wait.at)
	timing := ""
	if wait.p.DelayMs > 0 {
		timing = "retried after " + seconds(waited)
	}
	switch {
	case o.tty && o.note(wait.text(timing)):
		// Printed under the reply once it has gone on.
	case o.tty:
		o.line("%s", o.c(yellow, "  ↻ "+wait.text(timing)))
	case wait.p.DelayMs > 0 && o.cut:
		o.line("  ↻ waited %s, retrying from where the reply stopped", seconds(waited))
	case wait.p.DelayMs > 0:
		o.line("  ↻ waited %s, retrying", seconds(waited))
	}
}

// retryProgress reads `_meta["rebound/retry"]` of a session update into
// the type the agent writes it from.
func retryProgress(meta acp.Meta) (recovery.RetryProgress, bool) {
	var p recovery.RetryProgress
	v, ok := meta[recovery.ProgressMetaKey]
	if !ok {
		return p, false
	}
	raw, err := json.Marshal(v)
	if err != nil || json.Unmarshal(raw, &p) != nil {
		return p, false
	}
	return p, true
}

// finish shows the turn's outcome and says whether it was the expected one.
// result is the answer to session/prompt, or rerr the agent's error.
func (d *driver) finish(sc scene, result json.RawMessage, rerr *jsonrpc2.Error, before, toolCalls int, took time.Duration) bool {
	o := d.out
	o.clearLive()
	o.endReply()
	o.cut, o.replyID = false, "" // the turn's replies can go on no more
	outcome := ""
	if rerr != nil {
		outcome = "error"
		o.line("%s %s", o.c(boldGreen, "rebound:"), o.c(red, "✗ "+rerr.Message))
	} else {
		var r acp.PromptResponse
		_ = json.Unmarshal(result, &r)
		outcome = string(r.StopReason)
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
		facts += " · " + count(toolCalls, "tool call")
	}
	facts += " · " + seconds(took)
	if sc.Expect == "" {
		o.line("  %s", o.c(dim, "· "+facts))
		return true
	}
	d.expected++
	if outcome != sc.Expect {
		o.line("%s", o.c(red, fmt.Sprintf("  ✗ %s (expected %s)", facts, sc.Expect)))
		return false
	}
	d.asExpected++
	o.line("%s", o.c(green, "  ✓ "+facts))
	return true
}

// received records text the editor was sent for a message.
func (d *driver) received(id, text, thought string) {
	if _, seen := d.shown[id]; !seen {
		d.shownOrder = append(d.shownOrder, id)
	}
	d.shown[id] += text
	d.shownThought[id] += thought
}

// summary prints the closing table.
func (d *driver) summary(st *logStats, logPath string, self string) {
	o := d.out
	row := func(k, format string, args ...any) {
		o.line("  %-22s %s", k, fmt.Sprintf(format, args...))
	}
	o.line("")
	o.line("%s", o.c(bold, "Summary"))
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
		row("permission asked", "%s, answered by the demo: %s", count(st.permissions, "time"), st.permissionList())
	}
	row("time spent waiting", "%s", seconds(st.waited))
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
		discarded += discardedChars(d.shown[id], st.committed[id]) + discardedChars(d.shownThought[id], st.committedThought[id])
	}
	if discarded == 0 {
		row("shown, then discarded", "%s: every character the editor showed is in a committed reply", o.c(green, "0 characters"))
	} else {
		row("shown, then discarded", "%s the editor showed that no committed reply holds", o.c(red, count(discarded, "character")))
	}
	row("session log", "%s", logPath)
	if self != "" {
		// The log's path, not its id: the state dir is the demo's own,
		// not the one inspect would look in.
		o.line("  %-22s %s", "", o.c(dim, self+" inspect "+shellWord(logPath)+" shows its timeline"))
		o.line("  %-22s %s", "", o.c(dim, self+" sessions --state-dir "+shellWord(d.state)+" lists the sessions there"))
	}
}

// shellWord is s as one word a shell reads back as s: quoted when it holds
// anything but letters, digits and -_./:+@%,=.
func shellWord(s string) string {
	plain := s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:+@%,=", r))
	})
	if plain || s == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shownTool is a tool call as the editor shows it.
type shownTool struct {
	title, status string
	content       string    // what it showed, in a few words
	at            time.Time // announced
	done          bool      // completed or failed: its line is printed
}

// toolLine is a tool call's line: its title, its status and what it
// showed, e.g. "⚙ Read `README.md` · completed · Read README.md (412 bytes)".
func (d *driver) toolLine(t *shownTool) string {
	o := d.out
	status := t.status
	switch status {
	case acp.ToolStatusCompleted:
		status = o.c(green, status)
	case acp.ToolStatusFailed:
		status = o.c(red, status)
	default:
		status += " (never finished)"
	}
	line := "  " + o.c(cyan, "⚙") + " " + t.title + " · " + status
	if t.content != "" {
		line += " · " + o.c(dim, t.content)
	}
	return line
}

// toolContent is a tool call's content in a few words: its text (the
// first line, shortened), "diff of PATH" or "terminal".
func toolContent(cwd string, list []acp.ToolCallContent) string {
	var parts []string
	for _, c := range list {
		switch c.Type {
		case acp.ToolContentContent:
			if c.Content == nil || c.Content.Type != "text" {
				continue
			}
			if text, ok := firstLine(c.Content.Text); ok {
				parts = append(parts, text)
			}
		case acp.ToolContentDiff:
			parts = append(parts, "diff of "+projectPath(cwd, c.Path))
		case acp.ToolContentTerminal:
			parts = append(parts, "terminal")
		}
	}
	return strings.Join(parts, "; ")
}

// firstLine is text's first line that is not blank or a code fence
// (command output comes fenced), cut to 100 runes and marked " …" when
// anything was left out; ok is false when there is no such line.
func firstLine(text string) (line string, ok bool) {
	cut := false
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "```") {
			continue
		}
		if ok {
			cut = true // a second line: no need to read on
			break
		}
		line, ok = l, true
	}
	if !ok {
		return "", false
	}
	if r := []rune(line); len(r) > 100 {
		line, cut = string(r[:100]), true
	}
	if cut {
		line += " …"
	}
	return line, true
}

// projectPath is path relative to the project cwd when it lies inside it.
func projectPath(cwd, path string) string {
	if rel, err := filepath.Rel(cwd, path); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	return path
}

// fileList names a project's files: "README.md, main.go", or "empty".
func fileList(files map[string]string) string {
	if len(files) == 0 {
		return "empty"
	}
	return strings.Join(slices.Sorted(maps.Keys(files)), ", ")
}

// count is "1 tool call", "2 tool calls".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
