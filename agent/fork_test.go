package agent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/session"
)

// session/fork: the fork has its own log, starting with a record of its
// parent and a copy of the parent's finished turns; its first prompt sends
// the model the parent's conversation, it replays on load, and the
// parent's log is not touched.
func TestAgent_ForkSession(t *testing.T) {
	dir := t.TempDir()
	p := okProvider()
	a := newAgent(t, dir, p)
	parent := mustNew(t, a, "/p")
	mustPrompt(t, a, parent, "first")
	mustPrompt(t, a, parent, "second")
	before, err := os.ReadFile(session.Path(dir, parent))
	if err != nil {
		t.Fatal(err)
	}

	res, err := a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: parent, Cwd: "/q", AdditionalDirectories: []string{"/r"}})
	if err != nil {
		t.Fatalf("ForkSession: %v", err)
	}
	if res.SessionID == parent || res.SessionID == "" || res.Modes == nil {
		t.Fatalf("ForkSession = %+v, want a new session with its modes", res)
	}
	after, err := os.ReadFile(session.Path(dir, parent))
	if err != nil || !bytes.Equal(before, after) {
		t.Errorf("the parent's log changed: %v", err)
	}
	ld, err := session.Load(session.Path(dir, res.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	var start session.SessionStart
	if err := json.Unmarshal(ld.Events[0].Data, &start); err != nil {
		t.Fatal(err)
	}
	want := session.SessionStart{SessionID: res.SessionID, Cwd: "/q", Model: "m", AdditionalDirectories: []string{"/r"},
		ForkedFrom: &session.ForkOrigin{SessionID: parent, Turn: 2}}
	if diff := cmp.Diff(want, start); diff != "" {
		t.Errorf("the fork's session/start (-want +got):\n%s", diff)
	}

	mustPrompt(t, a, res.SessionID, "third")
	last := p.requests[len(p.requests)-1]
	var texts []string
	for _, m := range last.Messages[1:] {
		texts = append(texts, string(m.Role)+": "+m.Content)
	}
	if diff := cmp.Diff([]string{"user: first", "assistant: ok", "user: second", "assistant: ok", "user: third"}, texts); diff != "" {
		t.Errorf("the fork's first request (-want +got):\n%s", diff)
	}

	// A fresh process replays the fork: the parent's turns, then its own.
	b := newAgent(t, dir, okProvider())
	rec := &recorder{}
	if _, err := b.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: res.SessionID, Cwd: "/q"}, rec); err != nil {
		t.Fatal(err)
	}
	var replayed []string
	for _, s := range rec.texts() {
		if s != "usage_update: " {
			replayed = append(replayed, s)
		}
	}
	if diff := cmp.Diff([]string{"user_message_chunk: first", "agent_message_chunk: ok", "user_message_chunk: second",
		"agent_message_chunk: ok", "user_message_chunk: third", "agent_message_chunk: ok"}, replayed); diff != "" {
		t.Errorf("replay of the fork (-want +got):\n%s", diff)
	}
	if after2, _ := os.ReadFile(session.Path(dir, parent)); !bytes.Equal(before, after2) {
		t.Errorf("the parent's log changed after the fork's turn")
	}

	_, err = a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: "sess_nosuch", Cwd: "/q"})
	wantCode(t, "fork of an unknown session", err, acp.CodeResourceNotFound)
}

// A parent whose log another use holds locked (a turn runs) is forked all
// the same, from its last finished turn: the open turn is left out, the
// mode chosen during it kept, and the parent's lock is never taken.
func TestAgent_ForkSessionWhileTheParentRuns(t *testing.T) {
	dir := t.TempDir()
	const parent = "sess_running"
	l, err := session.Create(dir, parent, session.SessionStart{SessionID: parent, Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // held, locked, to the end
	finishedTurn(t, l, 1, "done")
	mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: 2, Prompt: json.RawMessage(`[]`), Text: "running"})
	mustAppend(t, l, session.TypeStepStart, session.StepStart{Turn: 2, Step: 1})
	mustAppend(t, l, session.TypeMode, session.Mode{Mode: "read_only"})
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}

	a := newAgent(t, dir, okProvider())
	res, err := a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: parent, Cwd: "/p"})
	if err != nil {
		t.Fatalf("ForkSession: %v", err)
	}
	if res.Modes == nil || res.Modes.CurrentModeID != "read_only" {
		t.Errorf("the fork's mode = %+v, want the parent's read_only", res.Modes)
	}
	ld, err := session.Load(session.Path(dir, res.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	if ld.OpenTurn != 0 || session.NextTurn(ld.Events) != 2 {
		t.Errorf("the fork has open turn %d, next turn %d; want none and 2", ld.OpenTurn, session.NextTurn(ld.Events))
	}
	// The parent's writer goes on writing.
	mustAppend(t, l, session.TypeStepEnd, session.StepEnd{Turn: 2, Step: 1, Outcome: session.OutcomeFailed})
	if err := l.Sync(); err != nil {
		t.Errorf("the parent's writer after the fork: %v", err)
	}
}

// Property: whatever the parent's log (finished turns, mode changes, an
// open turn at the end or not), the fork's log is valid and its committed
// conversation is the parent's up to its last finished turn.
func TestAgent_ForkSessionKeepsTheFinishedConversation(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			dir := t.TempDir()
			parent := "sess_parent"
			l, err := session.Create(dir, parent, session.SessionStart{SessionID: parent, Cwd: "/p"})
			if err != nil {
				t.Fatal(err)
			}
			turns := r.IntN(4)
			for n := 1; n <= turns; n++ {
				if r.IntN(3) == 0 {
					mustAppend(t, l, session.TypeMode, session.Mode{Mode: "read_only"})
				}
				finishedTurn(t, l, n, fmt.Sprintf("reply %d", n))
			}
			if r.IntN(2) == 0 {
				mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: turns + 1, Prompt: json.RawMessage(`[]`), Text: "open"})
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			pl, err := session.Load(session.Path(dir, parent))
			if err != nil {
				t.Fatal(err)
			}
			cut := len(pl.Events)
			for cut > 0 && pl.Events[cut-1].Type != session.TypeTurnEnd {
				cut--
			}
			want, err := session.Conversation(pl.Events[:max(cut, 1)])
			if err != nil {
				t.Fatal(err)
			}

			a := newAgent(t, dir, okProvider())
			res, err := a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: parent, Cwd: "/p"})
			if err != nil {
				t.Fatalf("ForkSession: %v", err)
			}
			fl, err := session.Load(session.Path(dir, res.SessionID))
			if err != nil {
				t.Fatalf("the fork's log is invalid: %v", err)
			}
			got, err := session.Conversation(fl.Events)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the fork's conversation (-parent's +fork's):\n%s", diff)
			}
			if _, err := os.Stat(filepath.Join(dir, "sessions")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// finishedTurn appends turn n: a prompt, one step with reply, its end.
func finishedTurn(t *testing.T, l *session.Log, n int, reply string) {
	t.Helper()
	id := fmt.Sprintf("msg_%032d", n)
	mustAppend(t, l, session.TypeTurnStart, session.TurnStart{Turn: n, Prompt: json.RawMessage(`[]`), Text: fmt.Sprintf("prompt %d", n)})
	mustAppend(t, l, session.TypeStepStart, session.StepStart{Turn: n, Step: 1, MessageID: id})
	mustAppend(t, l, session.TypeAssistantMessage, session.AssistantMessage{Turn: n, Step: 1, MessageID: id, Text: reply, FinishReason: "stop"})
	mustAppend(t, l, session.TypeStepEnd, session.StepEnd{Turn: n, Step: 1, Outcome: session.OutcomeOK})
	mustAppend(t, l, session.TypeTurnEnd, session.TurnEnd{Turn: n, StopReason: "end_turn"})
}

// session/fork reads its parent's log as session/load opens it: whatever
// is planted at the parent's path (a link to another session's log or to
// a user's file, a dangling link, a FIFO, a directory, a second name), a
// fork is refused exactly when a load is, in the same words, and a refused
// fork leaves no log behind.
func TestAgent_ForkOpensTheParentAsLoadDoes(t *testing.T) {
	plants := []struct {
		name string
		make func(t *testing.T, dir, other, path string)
	}{
		{"symlink to another session's log", func(t *testing.T, _, other, path string) { testkit.Symlink(t, other, path) }},
		{"symlink to a log outside", func(t *testing.T, _, other, path string) {
			out := filepath.Join(t.TempDir(), "copy.jsonl")
			b, err := os.ReadFile(other)
			testkit.Must(t, err)
			testkit.Must(t, os.WriteFile(out, b, 0o600))
			testkit.Symlink(t, out, path)
		}},
		{"dangling symlink", func(t *testing.T, _, _, path string) { testkit.Symlink(t, path+".missing", path) }},
		{"fifo", func(t *testing.T, _, _, path string) { testkit.Mkfifo(t, path) }},
		{"directory", func(t *testing.T, _, _, path string) { testkit.Must(t, os.Mkdir(path, 0o700)) }},
		{"hard link to another session's log", func(t *testing.T, _, other, path string) { testkit.Must(t, os.Link(other, path)) }},
		{"nothing", func(*testing.T, string, string, string) {}},
	}
	for _, pl := range plants {
		t.Run(pl.name, func(t *testing.T) {
			dir := t.TempDir()
			a := newAgent(t, dir, okProvider())
			parent, other := mustNew(t, a, "/p"), mustNew(t, a, "/o")
			mustPrompt(t, a, other, "first")
			a.Close()
			path := session.Path(dir, parent)
			testkit.Must(t, os.Remove(path))
			pl.make(t, dir, session.Path(dir, other), path)
			logs := func() []string {
				m, err := filepath.Glob(session.Path(dir, "*"))
				testkit.Must(t, err)
				return m
			}
			before := logs()

			_, lerr := newAgent(t, dir, okProvider()).LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: parent, Cwd: "/p"}, &recorder{})
			res, ferr := newAgent(t, dir, okProvider()).ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: parent, Cwd: "/q"})
			if (lerr == nil) != (ferr == nil) || (lerr != nil && lerr.Error() != ferr.Error()) {
				t.Fatalf("load says %v\nfork says %v\nwant the same", lerr, ferr)
			}
			if ferr == nil {
				if err := session.Remove(dir, res.SessionID); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(before, logs()); diff != "" {
				t.Errorf("the session logs (-before +after):\n%s", diff)
			}
		})
	}
}
