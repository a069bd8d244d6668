package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// Issue 29, items 2 and 12: a request that would change a session changes
// nothing unless its record is in the log, and only writes hold the log's
// lock. Another Rebound process is a session.Log opened with session.Open
// on the same file (a separate open file description, as another process
// has): while it is open, it holds the lock, as a running turn does.

// sessionMemory is what this process keeps of a session that a request
// could change.
type sessionMemory struct {
	opts      options
	events    int
	held      bool
	mcpClosed bool
}

func memoryOf(a *Agent, s *sessionState) sessionMemory {
	closed := false
	if s.mcp != nil {
		s.mcp.mu.Lock()
		closed = s.mcp.closed
		s.mcp.mu.Unlock()
	}
	a.store.mu.Lock()
	held := a.store.sessions[s.id] == s
	a.store.mu.Unlock()
	return sessionMemory{opts: s.current(), events: len(s.events), held: held, mcpClosed: closed}
}

// idleMCP is a session's MCP servers, started and none running, so a test
// can tell whether a request stopped them.
func idleMCP() *mcpServers {
	ready := make(chan struct{})
	close(ready)
	return &mcpServers{ready: ready, cancel: func() {}}
}

func setConfig(ctx context.Context, a *Agent, id, option, value string) error {
	v, _ := json.Marshal(value)
	_, err := a.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{SessionID: id, ConfigID: option, Value: v}, &editor{})
	return err
}

// lockConfig lets every option be set to a value other than its default.
func lockConfig(dir string, p llm.Provider) Config {
	return Config{StateDir: dir, Provider: p, Models: []string{"m", "other"}, ReasoningEffort: "low", LogIdleTimeout: time.Hour}
}

// TestAgent_RefusedChangeChangesNothing: every request that would change a
// session, refused because another process is writing it (-32003), leaves
// this process's memory and the log as they were; the other's mode is not
// overwritten later, and the next prompt asks before a command as that
// mode says, not as the refused full_access would.
func TestAgent_RefusedChangeChangesNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	requests := []struct {
		name string
		do   func(ctx context.Context, a *Agent, id string) error
	}{
		{"set_mode full_access", func(ctx context.Context, a *Agent, id string) error {
			_, err := a.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionID: id, ModeID: ModeFullAccess}, &editor{})
			return err
		}},
		{"set_mode ask (what this process thinks it is)", func(ctx context.Context, a *Agent, id string) error {
			_, err := a.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionID: id, ModeID: ModeAsk}, &editor{})
			return err
		}},
		{"set_config_option mode", func(ctx context.Context, a *Agent, id string) error {
			return setConfig(ctx, a, id, ModeConfigID, ModeFullAccess)
		}},
		{"set_config_option model", func(ctx context.Context, a *Agent, id string) error {
			return setConfig(ctx, a, id, ModelConfigID, "other")
		}},
		{"set_config_option thought_level", func(ctx context.Context, a *Agent, id string) error {
			return setConfig(ctx, a, id, ThoughtConfigID, "high")
		}},
		{"prompt", func(ctx context.Context, a *Agent, id string) error {
			_, err := ask(ctx, a, id, "hello")
			return err
		}},
		{"prompt /compact", func(ctx context.Context, a *Agent, id string) error {
			_, err := ask(ctx, a, id, "/compact")
			return err
		}},
		{"prompt /retry", func(ctx context.Context, a *Agent, id string) error {
			_, err := ask(ctx, a, id, "/retry")
			return err
		}},
		{"delete", func(ctx context.Context, a *Agent, id string) error {
			_, err := a.DeleteSession(ctx, acp.DeleteSessionRequest{SessionID: id})
			return err
		}},
	}
	for _, req := range requests {
		t.Run(req.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
				text("first"),
				toolCall("call_1", "run_command", `{"command":"echo hi"}`), text("done"),
			}}
			a := testAgent(t, lockConfig(dir, p))
			id := newSession(t, a)
			if _, err := ask(t.Context(), a, id, "first"); err != nil {
				t.Fatal(err)
			}
			s := a.store.sessions[id]
			s.mcp = idleMCP()

			// The other process runs a turn, and has chosen accept_edits.
			other, _, err := session.Open(dir, id)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.AppendSync(session.TypeMode, session.Mode{Mode: ModeAcceptEdits}); err != nil {
				t.Fatal(err)
			}
			before := memoryOf(a, s)
			file, _ := os.ReadFile(session.Path(dir, id))

			err = req.do(t.Context(), a, id)
			if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeSessionBusy {
				t.Fatalf("%s while another process writes = %v, want -32003", req.name, err)
			}
			if after := memoryOf(a, s); after != before {
				t.Errorf("the refused request changed memory:\n got %+v\nwant %+v", after, before)
			}
			if now, _ := os.ReadFile(session.Path(dir, id)); string(now) != string(file) {
				t.Errorf("the refused request wrote the log:\n%s", now[len(file):])
			}
			other.Close() // the other's turn has ended

			// The next prompt: the model runs a command, which
			// accept_edits asks about.
			c := &approver{answer: session.RejectOnce}
			if _, err := a.Prompt(t.Context(), acp.PromptRequest{SessionID: id, Prompt: []acp.ContentBlock{acp.TextBlock("run it")}}, c); err != nil {
				t.Fatal(err)
			}
			if len(c.asked) != 1 {
				t.Errorf("the next prompt asked %d times before running the command, want once (the mode is %s)", len(c.asked), s.current().mode)
			}
			evs := mustLoad(t, a, id)
			if m := session.LastMode(evs); m != ModeAcceptEdits {
				t.Errorf("the log's mode is %q, want the other process's %q", m, ModeAcceptEdits)
			}
			for _, opt := range []string{ModelConfigID, ThoughtConfigID} {
				if v, ok := session.LastConfig(evs, opt); ok {
					t.Errorf("the log records %s %q, which nobody set", opt, v)
				}
			}
			want := options{mode: ModeAcceptEdits, model: "m", thought: "low"}
			if o := s.current(); o != want {
				t.Errorf("options after the next prompt = %+v, want %+v", o, want)
			}
			if last := p.reqs[len(p.reqs)-1]; last.Model != "m" || last.ReasoningEffort != "low" {
				t.Errorf("the next prompt asked model %q with effort %q, want m with low", last.Model, last.ReasoningEffort)
			}
			if memoryOf(a, s).mcpClosed {
				t.Error("the session's MCP servers were stopped")
			}
		})
	}
}

// optionsOf are the options events record, over the defaults.
func optionsOf(a *Agent, events []session.Event) options {
	s := &sessionState{conversation: conversation{events: events}}
	s.options.load(a.menu.fromLog(events))
	return s.options.current()
}

// TestAgent_OptionsAreTheLog is a property over random sequences of option
// changes, prompts and another process's turns (which hold the lock and
// record options of their own): after every request, the options this
// process uses are the ones its events record; a request that succeeded
// left its value as the log's last word, and a refused one left memory and
// the file as they were.
func TestAgent_OptionsAreTheLog(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runOptionsProperty(t, seed, 40) })
	}
}

func runOptionsProperty(t *testing.T, seed uint64, ops int) {
	dir := t.TempDir()
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}
	a := testAgent(t, lockConfig(dir, p))
	id := newSession(t, a)
	s := a.store.sessions[id]
	r := rand.New(rand.NewPCG(seed, 29))
	values := map[string][]string{
		ModeConfigID:    modeIDs(),
		ModelConfigID:   {"m", "other"},
		ThoughtConfigID: append([]string{ThoughtDefault}, ReasoningEfforts...),
	}
	var other *session.Log // the other process, while its turn runs
	defer func() {
		if other != nil {
			other.Close()
		}
	}()
	for op := range ops {
		where := fmt.Sprintf("seed %d op %d", seed, op)
		switch k := r.IntN(10); {
		case k < 2: // the other process starts or ends a turn
			if other == nil {
				l, _, err := session.Open(dir, id)
				if err != nil {
					t.Fatalf("%s: the other process: %v", where, err)
				}
				other = l
			} else {
				other.Close()
				other = nil
			}
			continue
		case k < 4 && other != nil: // the other records an option
			opt := configIDs[r.IntN(len(configIDs))]
			v := values[opt][r.IntN(len(values[opt]))]
			var err error
			if opt == ModeConfigID {
				_, err = other.AppendSync(session.TypeMode, session.Mode{Mode: v})
			} else {
				_, err = other.AppendSync(session.TypeConfig, session.Config{ConfigID: opt, Value: v})
			}
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			continue
		}
		before := memoryOf(a, s)
		file, _ := os.ReadFile(session.Path(dir, id))
		var err error
		opt, v := "", ""
		switch r.IntN(3) {
		case 0:
			_, err = ask(t.Context(), a, id, "hi")
		case 1:
			opt, v = ModeConfigID, values[ModeConfigID][r.IntN(len(Modes))]
			_, err = a.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: v}, &editor{})
		default:
			opt = configIDs[r.IntN(len(configIDs))]
			v = values[opt][r.IntN(len(values[opt]))]
			err = setConfig(t.Context(), a, id, opt, v)
		}
		if other != nil {
			if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeSessionBusy {
				t.Fatalf("%s: a request while the other writes = %v, want -32003", where, err)
			}
			if after := memoryOf(a, s); after != before {
				t.Fatalf("%s: the refused request changed memory: %+v, was %+v", where, after, before)
			}
			if now, _ := os.ReadFile(session.Path(dir, id)); string(now) != string(file) {
				t.Fatalf("%s: the refused request wrote the log", where)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if got, want := s.current(), optionsOf(a, s.events); got != want {
			t.Fatalf("%s: the session uses %+v, its events record %+v", where, got, want)
		}
		if other == nil {
			// Nobody writes now: the file is what this process has read.
			ld, err := session.Load(session.Path(dir, id))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := s.current(), optionsOf(a, ld.Events); got != want {
				t.Fatalf("%s: the session uses %+v, the log records %+v", where, got, want)
			}
			if o := optionsOf(a, ld.Events); opt != "" && *o.field(opt) != v {
				t.Fatalf("%s: %s is %q in the log after it was set to %q", where, opt, *o.field(opt), v)
			}
		}
	}
}

// TestAgent_ChangeDuringTurnIsRecordedFirst: a change while a turn of this
// process runs is written through the turn's hold of the log before it is
// answered, applies from the turn's next request, and keeps the events in
// memory in the file's order.
func TestAgent_ChangeDuringTurnIsRecordedFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		release := make(chan struct{})
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){
			func(ctx context.Context, req llm.Request) (llm.Stream, error) {
				<-release // the first request waits while the mode changes
				return toolCall("call_1", "read_file", `{"path":"a.txt"}`)(ctx, req)
			},
			text("done"),
		}}
		a := testAgent(t, lockConfig(dir, p))
		id := newSession(t, a)
		running := make(chan error, 1)
		go func() {
			_, err := ask(t.Context(), a, id, "go")
			running <- err
		}()
		synctest.Wait()
		if _, err := a.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: ModeReadOnly}, &editor{}); err != nil {
			t.Fatalf("SetSessionMode during a turn = %v", err)
		}
		ld, err := session.Load(session.Path(dir, id))
		if err != nil {
			t.Fatal(err)
		}
		if m := session.LastMode(ld.Events); m != ModeReadOnly {
			t.Errorf("when set_mode was answered the log's mode was %q, want %q", m, ModeReadOnly)
		}
		if err := setConfig(t.Context(), a, id, ModelConfigID, "other"); err != nil {
			t.Fatalf("set_config_option during a turn = %v", err)
		}
		close(release)
		if err := <-running; err != nil {
			t.Fatal(err)
		}
		if got := p.reqs[1]; got.Model != "other" || len(got.Tools) != len(toolsFor(ModeReadOnly)) {
			t.Errorf("the turn's next request asked %q with %d tools, want other with read_only's %d", got.Model, len(got.Tools), len(toolsFor(ModeReadOnly)))
		}
		evs := mustLoad(t, a, id)
		s := a.store.sessions[id]
		if !slices.EqualFunc(s.events, evs, func(x, y session.Event) bool { return x.Seq == y.Seq && x.Type == y.Type }) {
			t.Errorf("the events in memory are not the file's:\n got %v\nwant %v", seqs(s.events), seqs(evs))
		}
		a.Close()
	})
}

func seqs(evs []session.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = fmt.Sprintf("%d %s", ev.Seq, ev.Type)
	}
	return out
}

// blockedEditor is an editor that stops reading: its first update blocks
// until unblock is closed.
type blockedEditor struct {
	editor
	blocked chan struct{} // closed once an update blocks
	unblock chan struct{}
	once    bool
}

func (e *blockedEditor) Update(ctx context.Context, id string, u acp.SessionUpdate) error {
	if !e.once {
		e.once = true
		close(e.blocked)
		<-e.unblock
	}
	return e.editor.Update(ctx, id, u)
}

// TestAgent_LoadHoldsNoLockWhileReplaying: an editor that stops reading
// during a load's replay keeps no other process from running a turn of the
// session, or changing its mode; the load still replays what it read, and
// writes nothing.
func TestAgent_LoadHoldsNoLockWhileReplaying(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("one"), text("two")}}
	first := testAgent(t, lockConfig(dir, p))
	second := testAgent(t, lockConfig(dir, p))
	id := newSession(t, first)
	if _, err := ask(t.Context(), first, id, "hi"); err != nil {
		t.Fatal(err)
	}
	ed := &blockedEditor{blocked: make(chan struct{}), unblock: make(chan struct{})}
	loaded := make(chan error, 1)
	go func() {
		_, err := second.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, ed)
		loaded <- err
	}()
	<-ed.blocked // the replay waits for the editor
	if _, err := ask(t.Context(), first, id, "meanwhile"); err != nil {
		t.Errorf("Prompt in another process during a stalled load = %v, want it run", err)
	}
	if _, err := first.SetSessionMode(t.Context(), acp.SetSessionModeRequest{SessionID: id, ModeID: ModeReadOnly}, &editor{}); err != nil {
		t.Errorf("SetSessionMode in another process during a stalled load = %v, want it set", err)
	}
	close(ed.unblock)
	if err := <-loaded; err != nil {
		t.Fatalf("the load = %v", err)
	}
	if n := countUserChunks(&ed.editor); n != 1 {
		t.Errorf("the load replayed %d prompts, want the 1 it read", n)
	}
	// The loading process reads the other's turn at its next use.
	if _, err := ask(t.Context(), second, id, "after"); err != nil {
		t.Fatal(err)
	}
	if m := second.store.sessions[id].current().mode; m != ModeReadOnly {
		t.Errorf("the loading process's mode is %q, want %q", m, ModeReadOnly)
	}
	if n := count(mustLoad(t, second, id), session.TypeTurnEnd); n != 3 {
		t.Errorf("%d turns in the log, want 3", n)
	}
}

// TestAgent_ChangeDuringLoadWaitsForIt: a load of this process holds the
// session (not the log's lock) while it replays; a change meanwhile waits
// for it, then is recorded. One whose request ends first gives up and
// changes nothing.
func TestAgent_ChangeDuringLoadWaitsForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		p := &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("one")}}
		first := testAgent(t, lockConfig(dir, p))
		id := newSession(t, first)
		if _, err := ask(t.Context(), first, id, "hi"); err != nil {
			t.Fatal(err)
		}
		a := testAgent(t, lockConfig(dir, p))
		ed := &blockedEditor{blocked: make(chan struct{}), unblock: make(chan struct{})}
		loaded := make(chan error, 1)
		go func() {
			_, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: id, Cwd: t.TempDir()}, ed)
			loaded <- err
		}()
		<-ed.blocked
		s := a.store.sessions[id]

		ctx, cancel := context.WithCancel(t.Context())
		gaveUp := make(chan error, 1)
		go func() {
			_, err := a.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionID: id, ModeID: ModeFullAccess}, &editor{})
			gaveUp <- err
		}()
		set := make(chan error, 1)
		go func() {
			set <- setConfig(t.Context(), a, id, ModelConfigID, "other")
		}()
		synctest.Wait()
		select {
		case err := <-set:
			t.Fatalf("set_config_option during a load was answered (%v) before the load ended", err)
		default:
		}
		cancel()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("set_mode whose request ended while it waited = %v, want context.Canceled", err)
		}
		if m := s.current().mode; m != ModeAsk {
			t.Errorf("the mode is %q after a change that gave up, want ask", m)
		}
		close(ed.unblock)
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		if err := <-set; err != nil {
			t.Fatalf("set_config_option once the load ended = %v", err)
		}
		evs := mustLoad(t, a, id)
		if v, _ := session.LastConfig(evs, ModelConfigID); v != "other" || s.current().model != "other" {
			t.Errorf("model in the log %q, in memory %q, want other", v, s.current().model)
		}
		if m := session.LastMode(evs); m != "" {
			t.Errorf("the log records mode %q, set by a request that gave up", m)
		}
		a.Close()
		first.Close()
	})
}
