package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/agent/mcp"
	"github.com/rebound-agent/rebound/agent/tools"
	"github.com/rebound-agent/rebound/internal/proc"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
	"github.com/rs/zerolog"
)

// These tests run the tool runner with fakes: an editor that answers
// permission requests as told and writes nowhere but its own list, and a
// log that is a slice. No Agent, no session.

// runnerLog is what a test runner did, in order: the events it recorded
// ("record <type>") and the editor calls it made ("ask", "write <path>",
// "terminal").
type runnerLog struct {
	steps  []string
	events []any
	// failOn makes recording an event of that type fail.
	failOn string
}

// testRunner is a runner for tests: mode and rules as given (nil: none),
// no MCP servers, everything recorded in the returned log.
func testRunner(ed toolEditor, ws *tools.Workspace, mode string, rules map[string]string) (*toolRunner, *runnerLog) {
	if rules == nil {
		rules = map[string]string{}
	}
	log := &runnerLog{}
	nop := zerolog.Nop()
	record := func(typ string, data any) error {
		if typ == log.failOn {
			return errors.New("the disk is full")
		}
		log.steps = append(log.steps, "record "+typ)
		log.events = append(log.events, data)
		return nil
	}
	r := &toolRunner{
		ed: ed, ws: ws, sessionID: "sess_test", turn: 1,
		record:   record,
		notify:   func(context.Context, acp.SessionUpdate) {},
		answered: func(llm.Message) {},
		mode:     func() string { return mode },
		gate: &permissionGate{asker: ed, sessionID: "sess_test", turn: 1, record: record,
			mode: func() string { return mode }, rules: func() map[string]string { return rules }, log: &nop},
		mcp:     (*mcp.Set)(nil),
		cfg:     Tools{CommandTimeout: 10 * time.Second, MaxCommandTimeout: 10 * time.Second, OutputLimit: 1 << 10},
		secrets: func() proc.Secrets { return proc.Secrets{} },
		log:     &nop,
	}
	return r, log
}

// gateEditor answers every permission request with answer ("" cancels)
// and records the requests and the calls that would change something.
type gateEditor struct {
	acp.Client // what a test does not expect is a nil call: it panics
	log        *runnerLog
	answer     string
	// onAsk runs when permission is asked, before the answer.
	onAsk func()
	asked []acp.RequestPermissionRequest
}

func (e *gateEditor) Capabilities() acp.ClientCapabilities {
	return acp.ClientCapabilities{FS: acp.FileSystemCapabilities{WriteTextFile: true}, Terminal: true}
}

func (e *gateEditor) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	e.log.steps = append(e.log.steps, "ask")
	e.asked = append(e.asked, req)
	if e.onAsk != nil {
		e.onAsk()
	}
	if e.answer == "" {
		return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionCancelled}}, nil
	}
	return acp.RequestPermissionResponse{Outcome: acp.RequestPermissionOutcome{Outcome: acp.PermissionSelected, OptionID: e.answer}}, nil
}

func (e *gateEditor) WriteTextFile(_ context.Context, req acp.WriteTextFileRequest) error {
	e.log.steps = append(e.log.steps, "write "+filepath.Base(req.Path))
	return nil
}

func (e *gateEditor) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	e.log.steps = append(e.log.steps, "terminal")
	return acp.CreateTerminalResponse{}, errors.New("no terminal in this test")
}

// newFakeRunner is a runner in a fresh workspace whose editor answers
// answer.
func newFakeRunner(t *testing.T, mode, answer string) (*toolRunner, *gateEditor, *runnerLog) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	ed := &gateEditor{answer: answer}
	r, log := testRunner(ed, tools.NewWorkspace(dir), mode, nil)
	ed.log = log
	return r, ed, log
}

func writeCall(id, path string) session.MessageToolCall {
	return session.MessageToolCall{ID: id, Name: tools.WriteFile, Arguments: fmt.Sprintf(`{"path":%q,"content":"x"}`, path)}
}

// results are the tool results the runner recorded, by call id.
func (l *runnerLog) results() map[string]session.ToolResult {
	out := map[string]session.ToolResult{}
	for _, ev := range l.events {
		if r, ok := ev.(session.ToolResult); ok {
			out[r.ToolCallID] = r
		}
	}
	return out
}

func (l *runnerLog) permissions() []session.Permission {
	var out []session.Permission
	for _, ev := range l.events {
		if p, ok := ev.(session.Permission); ok {
			out = append(out, p)
		}
	}
	return out
}

// TestToolRunner_AsksBeforeRunning: in ask mode a write is asked about,
// the answer recorded, and only then written.
func TestToolRunner_AsksBeforeRunning(t *testing.T) {
	r, _, log := newFakeRunner(t, ModeAsk, session.AllowOnce)
	if err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c1", "a.txt")}); err != nil {
		t.Fatal(err)
	}
	want := []string{"record " + session.TypeToolCall, "ask", "record " + session.TypePermission, "write a.txt", "record " + session.TypeToolResult}
	if !slices.Equal(log.steps, want) {
		t.Fatalf("steps %q, want %q", log.steps, want)
	}
	if got := log.results()["c1"].Status; got != session.ToolCompleted {
		t.Errorf("result %q, want completed", got)
	}
}

// TestToolRunner_RejectedNeverRuns: a rejected write is not written and a
// rejected command is not started, here or in the editor's terminal.
func TestToolRunner_RejectedNeverRuns(t *testing.T) {
	for _, answer := range []string{session.RejectOnce, session.RejectAlways} {
		r, ed, log := newFakeRunner(t, ModeAsk, answer)
		marker := filepath.Join(r.ws.Cwd(), "ran")
		calls := []session.MessageToolCall{
			writeCall("c1", "a.txt"),
			{ID: "c2", Name: tools.RunCommand, Arguments: fmt.Sprintf(`{"command":"touch %s"}`, marker)},
		}
		if err := r.useTools(t.Context(), 1, calls); err != nil {
			t.Fatal(err)
		}
		for _, s := range log.steps {
			if strings.HasPrefix(s, "write") || s == "terminal" {
				t.Errorf("%s: %s after a rejection (steps %q)", answer, s, log.steps)
			}
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the rejected command ran", answer)
		}
		if len(ed.asked) != 2 {
			t.Errorf("%s: asked %d times, want 2", answer, len(ed.asked))
		}
		for id, res := range log.results() {
			if res.Status != session.ToolFailed || !strings.Contains(res.Output, "declined") {
				t.Errorf("%s: %s result %+v, want declined", answer, id, res)
			}
		}
	}
}

// TestToolRunner_AllowAlwaysRecordedFirst: a standing answer takes effect
// only once it is in the log: when it is recorded the rule is not there
// yet, later calls then go ahead without asking, and an answer the log
// could not keep allows nothing.
func TestToolRunner_AllowAlwaysRecordedFirst(t *testing.T) {
	r, ed, log := newFakeRunner(t, ModeAsk, session.AllowAlways)
	rules := r.gate.rules
	record := r.gate.record
	r.gate.record = func(typ string, data any) error {
		if typ == session.TypePermission && rules()[scopeEdits] != "" {
			t.Errorf("the rule for edits was %q before its answer was recorded", rules()[scopeEdits])
		}
		return record(typ, data)
	}
	if err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c1", "a.txt"), writeCall("c2", "b.txt")}); err != nil {
		t.Fatal(err)
	}
	if len(ed.asked) != 1 || r.gate.rules()[scopeEdits] != session.AllowAlways {
		t.Fatalf("asked %d times, rule %q; want once, allow_always", len(ed.asked), r.gate.rules()[scopeEdits])
	}
	if got := log.permissions(); len(got) != 1 || got[0].Outcome != session.AllowAlways || got[0].Scope != scopeEdits {
		t.Errorf("permissions recorded %+v", got)
	}
	if !slices.Contains(log.steps, "write b.txt") {
		t.Errorf("the second write did not happen: %q", log.steps)
	}

	// The log fails to keep the answer: nothing runs, no rule is made.
	r, _, log = newFakeRunner(t, ModeAsk, session.AllowAlways)
	log.failOn = session.TypePermission
	err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c1", "a.txt")})
	if err == nil || !strings.Contains(err.Error(), "record permission") {
		t.Fatalf("err = %v, want the log's failure", err)
	}
	if r.gate.rules()[scopeEdits] != "" || slices.Contains(log.steps, "write a.txt") {
		t.Errorf("rule %q, steps %q: an unrecorded answer took effect", r.gate.rules()[scopeEdits], log.steps)
	}
}

// TestToolRunner_CancelDuringPermission: the user cancels the turn while
// asked: the call does not run, the cancel is recorded as the answer, the
// call and the ones after it get results, and the turn is told it was
// cancelled.
func TestToolRunner_CancelDuringPermission(t *testing.T) {
	r, ed, log := newFakeRunner(t, ModeAsk, "")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ed.onAsk = cancel
	err := r.useTools(ctx, 1, []session.MessageToolCall{writeCall("c1", "a.txt"), writeCall("c2", "b.txt")})
	if !errors.Is(err, errCancelledDuringTool) {
		t.Fatalf("err = %v, want errCancelledDuringTool", err)
	}
	if len(ed.asked) != 1 || slices.ContainsFunc(log.steps, func(s string) bool { return strings.HasPrefix(s, "write") }) {
		t.Errorf("asked %d, steps %q: want one request and no write", len(ed.asked), log.steps)
	}
	if got := log.permissions(); len(got) != 1 || got[0].Outcome != session.PermissionCancelled {
		t.Errorf("permissions recorded %+v, want one cancelled", got)
	}
	res := log.results()
	if len(res) != 2 || res["c1"].Status != session.ToolAborted || res["c2"].Status != session.ToolAborted {
		t.Errorf("results %+v, want both aborted", res)
	}
}

// TestToolRunner_ProtectedAsksInAcceptEdits: accept_edits writes without
// asking, but not where a program could be made to run; that request
// offers no standing answer.
func TestToolRunner_ProtectedAsksInAcceptEdits(t *testing.T) {
	r, ed, log := newFakeRunner(t, ModeAcceptEdits, session.AllowOnce)
	if err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c1", "a.txt")}); err != nil {
		t.Fatal(err)
	}
	if len(ed.asked) != 0 || !slices.Contains(log.steps, "write a.txt") {
		t.Fatalf("a plain write in accept_edits: asked %d, steps %q", len(ed.asked), log.steps)
	}
	if err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c2", ".git/hooks/pre-commit")}); err != nil {
		t.Fatal(err)
	}
	if len(ed.asked) != 1 {
		t.Fatalf("a write to .git/hooks in accept_edits asked %d times, want once", len(ed.asked))
	}
	for _, o := range ed.asked[0].Options {
		if o.OptionID == session.AllowAlways || o.OptionID == session.RejectAlways {
			t.Errorf("a protected write offers %s", o.OptionID)
		}
	}
	if i, j := slices.Index(log.steps, "ask"), slices.Index(log.steps, "write pre-commit"); i < 0 || j < i {
		t.Errorf("steps %q: want the write after the request", log.steps)
	}
}

// TestToolRunner_GateProperties runs a write through the runner in every
// mode, standing answer, protection and answer, and checks what must
// hold whatever the combination: nothing is written unless allowed, an
// answer is recorded before it takes effect, read_only never asks or
// writes, a protected write asks unless full_access or a standing
// rejection decides, and a cancel stops the turn.
func TestToolRunner_GateProperties(t *testing.T) {
	answers := []string{session.AllowOnce, session.AllowAlways, session.RejectOnce, session.RejectAlways, ""}
	for _, m := range Modes {
		for _, rule := range []string{"", session.AllowAlways, session.RejectAlways} {
			for _, protected := range []bool{false, true} {
				for _, answer := range answers {
					name := fmt.Sprintf("%s/rule=%q/protected=%v/answer=%q", m.ID, rule, protected, answer)
					r, ed, log := newFakeRunner(t, m.ID, answer)
					if rule != "" {
						r.gate.rules()[scopeEdits] = rule
					}
					path, file := "a.txt", "write a.txt"
					if protected {
						path, file = ".git/hooks/pre-commit", "write pre-commit"
					}
					err := r.useTools(t.Context(), 1, []session.MessageToolCall{writeCall("c1", path)})
					asked := len(ed.asked) > 0
					want := cmp.Or(answer, session.PermissionCancelled)
					if protected { // no standing answer is offered, nor taken
						want = cmp.Or(map[string]string{session.AllowAlways: session.AllowOnce, session.RejectAlways: session.RejectOnce}[want], want)
					}
					wrote := slices.Index(log.steps, file)
					perms := log.permissions()
					switch {
					case m.ID == ModeReadOnly && (asked || wrote >= 0):
						t.Errorf("%s: read_only asked or wrote: %q", name, log.steps)
					case rule == session.RejectAlways && (asked || wrote >= 0):
						t.Errorf("%s: a standing rejection asked or wrote: %q", name, log.steps)
					case protected && m.ID != ModeFullAccess && m.ID != ModeReadOnly && rule != session.RejectAlways && !asked:
						t.Errorf("%s: a protected write was not asked about: %q", name, log.steps)
					case !asked && wrote >= 0 && m.ID != ModeAcceptEdits && m.ID != ModeFullAccess && rule != session.AllowAlways:
						t.Errorf("%s: wrote without asking: %q", name, log.steps)
					case asked && (len(perms) != 1 || perms[0].Outcome != want):
						t.Errorf("%s: asked, recorded %+v", name, perms)
					case asked && wrote >= 0 && (answer != session.AllowOnce && answer != session.AllowAlways ||
						wrote < slices.Index(log.steps, "record "+session.TypePermission)):
						t.Errorf("%s: wrote without a recorded allowance: %q", name, log.steps)
					case asked && answer == "" && !errors.Is(err, errCancelledDuringTool):
						t.Errorf("%s: a cancelled request gave %v", name, err)
					case err != nil && answer != "":
						t.Errorf("%s: %v", name, err)
					}
					if protected && asked && r.gate.rules()[scopeEdits] != rule {
						t.Errorf("%s: a protected write changed the standing answer to %q", name, r.gate.rules()[scopeEdits])
					}
				}
			}
		}
	}
}
