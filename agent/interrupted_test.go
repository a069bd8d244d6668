package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/llm"
	"github.com/rebound-agent/rebound/session"
)

// sessionOnDisk is what lastInterrupted reads of one session's log.
type sessionOnDisk struct {
	mod              time.Time
	last             session.LastTurn
	held             bool
	gone             bool  // removed since the index listed it
	modErr           error // the log can't be stat'ed
	readErr, heldErr error
}

// disk serves sessionLogs from logs, counting the logs read.
type disk struct {
	logs  map[string]sessionOnDisk
	reads int
}

func (f *disk) sessionLogs() sessionLogs {
	return sessionLogs{
		modTime: func(id string) (time.Time, error) {
			l := f.logs[id]
			if l.gone {
				return time.Time{}, session.ErrNotFound
			}
			return l.mod, l.modErr
		},
		lastTurn: func(id string) (session.LastTurn, error) {
			f.reads++
			l := f.logs[id]
			return l.last, l.readErr
		},
		held: func(id string) (bool, error) { l := f.logs[id]; return l.held, l.heldErr },
	}
}

var noticeT0 = time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)

// at is a time n minutes after noticeT0.
func noticeAt(n int) time.Time { return noticeT0.Add(time.Duration(n) * time.Minute) }

// Log states, by how their last turn ended: each log was last written a
// minute after its last turn started (mod).
func logOpen(n int) sessionOnDisk {
	return sessionOnDisk{mod: noticeAt(n + 1), last: session.LastTurn{Turn: 2, Started: noticeAt(n), Last: noticeAt(n + 1)}}
}
func logEnded(n int) sessionOnDisk {
	return sessionOnDisk{mod: noticeAt(n + 1), last: session.LastTurn{Turn: 1, Started: noticeAt(n), Ended: true, Last: noticeAt(n + 1)}}
}
func logRepaired(n int) sessionOnDisk {
	// Closed by a load later (n+30), which writes the log again.
	return sessionOnDisk{mod: noticeAt(n + 30), last: session.LastTurn{Turn: 3, Started: noticeAt(n), Ended: true, Interrupted: true, Last: noticeAt(n + 1)}}
}
func logUntitled(n int) sessionOnDisk { return sessionOnDisk{mod: noticeAt(n)} }

func logWith(l sessionOnDisk, f func(*sessionOnDisk)) sessionOnDisk { f(&l); return l }

// Which session a first prompt's notice names: the session of the same
// directory whose last turn started last, when a stop of Rebound's cut
// that turn and nobody runs it now; none otherwise.
func TestLastInterrupted_Choice(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		cwds map[string]string // id → cwd; "/p" when absent
		logs map[string]sessionOnDisk
		want string // "" when there is nothing to say
		errs int
	}{
		{name: "the last session here was cut", logs: map[string]sessionOnDisk{"a": logEnded(0), "b": logOpen(10)}, want: "b"},
		{name: "cut, then closed by a load", logs: map[string]sessionOnDisk{"a": logEnded(0), "b": logRepaired(10)}, want: "b"},
		{name: "the last session here ended", logs: map[string]sessionOnDisk{"a": logOpen(0), "b": logEnded(10)}},
		{name: "a load that closed an older cut turn does not make it the last",
			logs: map[string]sessionOnDisk{"a": logRepaired(0), "b": logEnded(10)}},
		{name: "its turn runs now (its lock is held)", logs: map[string]sessionOnDisk{"a": logEnded(0), "b": logWith(logOpen(10), func(l *sessionOnDisk) { l.held = true })}},
		{name: "sessions never prompted are passed over", logs: map[string]sessionOnDisk{"a": logOpen(0), "b": logUntitled(10), "c": logUntitled(20)}, want: "a"},
		{name: "only this directory: the cut session elsewhere is newer",
			cwds: map[string]string{"b": "/q"}, logs: map[string]sessionOnDisk{"a": logEnded(0), "b": logOpen(10)}},
		{name: "only this directory: a prefix is another directory",
			cwds: map[string]string{"b": "/p/sub", "c": "/"}, logs: map[string]sessionOnDisk{"b": logOpen(10), "c": logOpen(20)}},
		{name: "the same directory written otherwise", cwds: map[string]string{"b": "/p/./"}, logs: map[string]sessionOnDisk{"b": logOpen(10)}, want: "b"},
		{name: "never the session itself", logs: map[string]sessionOnDisk{"a": logOpen(0), "self": logOpen(10)}, want: "a"},
		{name: "the notice's own session, once prompted, is the last: not twice",
			logs: map[string]sessionOnDisk{"a": logOpen(0), "self2": logEnded(10)}},
		{name: "a log removed since the index listed it", logs: map[string]sessionOnDisk{"a": logOpen(0), "b": logWith(logEnded(10), func(l *sessionOnDisk) { l.gone = true })}, want: "a"},
		{name: "a log that can't be read is passed over, with a warning",
			logs: map[string]sessionOnDisk{"a": logOpen(0), "b": logWith(logEnded(10), func(l *sessionOnDisk) { l.readErr = boom })}, want: "a", errs: 1},
		{name: "a log that can't be stat'ed is passed over, with a warning",
			logs: map[string]sessionOnDisk{"a": logOpen(0), "b": logWith(logEnded(10), func(l *sessionOnDisk) { l.modErr = boom })}, want: "a", errs: 1},
		{name: "a lock that can't be probed: nothing said, a warning",
			logs: map[string]sessionOnDisk{"a": logWith(logOpen(0), func(l *sessionOnDisk) { l.heldErr = boom })}, errs: 1},
		{name: "no other session", logs: map[string]sessionOnDisk{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sums []session.Summary
			for id := range tc.logs {
				sums = append(sums, session.Summary{SessionID: id, Cwd: orCwd(tc.cwds[id], "/p"), Title: "T " + id})
			}
			fl := &disk{logs: tc.logs}
			sum, _, ok, errs := lastInterrupted(sums, "self", "/p", fl.sessionLogs())
			got := ""
			if ok {
				got = sum.SessionID
			}
			if got != tc.want || len(errs) != tc.errs {
				t.Errorf("chose %q with %d warnings (%v), want %q with %d", got, len(errs), errs, tc.want, tc.errs)
			}
		})
	}
}

func orCwd(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

// lastInterrupted against a choice made by reading every log: for random
// directories of sessions in every state (never prompted, running, cut,
// cut and closed by a load, ended, removed, unreadable), in random order
// with ties, the pruned search chooses what reading them all would.
func TestLastInterrupted_AsReadingEveryLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	for i := range 3000 {
		n := rng.IntN(12)
		logs := map[string]sessionOnDisk{}
		var sums []session.Summary
		for j := range n {
			id := fmt.Sprintf("s%02d", j)
			if rng.IntN(8) == 0 {
				id = "self"
			}
			// Starts a few hundred ms apart, some equal; written up to
			// seconds later.
			start := noticeT0.Add(time.Duration(rng.IntN(20)) * 200 * time.Millisecond)
			l := sessionOnDisk{mod: start.Add(time.Duration(rng.IntN(3000)) * time.Millisecond), last: session.LastTurn{Turn: 1 + rng.IntN(3), Started: start}}
			switch rng.IntN(7) {
			case 0:
				l.last = session.LastTurn{}
			case 1, 2:
				l.last.Ended = true
			case 3:
				l.last.Ended, l.last.Interrupted = true, true
				l.mod = l.mod.Add(time.Duration(rng.IntN(60)) * time.Minute)
			}
			if rng.IntN(6) == 0 {
				l.held = true
			}
			switch rng.IntN(20) {
			case 0:
				l.gone = true
			case 1:
				l.readErr = errors.New("unreadable")
			}
			if rng.IntN(10) == 0 {
				// Within the file system clock's coarseness.
				l.mod = l.last.Started.Add(-time.Duration(rng.IntN(int(clockSlack/time.Millisecond))) * time.Millisecond)
			}
			cwd := []string{"/p", "/p/", "/q"}[rng.IntN(3)]
			logs[id] = l
			sums = append(sums, session.Summary{SessionID: id, Cwd: cwd})
		}
		fl := &disk{logs: logs}
		sum, _, ok, _ := lastInterrupted(sums, "self", "/p", fl.sessionLogs())
		got := ""
		if ok {
			got = sum.SessionID
		}
		if want := readingEveryLog(sums, logs); got != want {
			t.Fatalf("case %d: chose %q, reading every log chooses %q\n%+v\n%+v", i, got, want, sums, logs)
		}
	}
}

// readingEveryLog is the choice made the slow way: every log of the
// directory read, the one whose last turn started last (the latest
// written among equals, then the first id).
func readingEveryLog(sums []session.Summary, logs map[string]sessionOnDisk) string {
	var best string
	var bl sessionOnDisk
	for _, s := range sums {
		l := logs[s.SessionID]
		if s.SessionID == "self" || filepath.Clean(s.Cwd) != "/p" || l.gone || l.readErr != nil || l.last.Turn == 0 {
			continue
		}
		better := best == "" || l.last.Started.After(bl.last.Started)
		if !better && l.last.Started.Equal(bl.last.Started) {
			better = l.mod.After(bl.mod) || l.mod.Equal(bl.mod) && s.SessionID < best
		}
		if better {
			best, bl = s.SessionID, l
		}
	}
	if best == "" || bl.last.Ended && !bl.last.Interrupted || bl.held {
		return ""
	}
	return best
}

// The search reads the logs newest first and stops at the first that can't
// have started a turn later: among hundreds of sessions of a directory,
// a couple are read.
func TestLastInterrupted_ReadsFewLogs(t *testing.T) {
	logs := map[string]sessionOnDisk{}
	var sums []session.Summary
	for j := range 500 {
		id := fmt.Sprintf("s%03d", j)
		logs[id] = logEnded(j * 2)
		sums = append(sums, session.Summary{SessionID: id, Cwd: "/p"})
	}
	logs["s499"] = logOpen(998)
	fl := &disk{logs: logs}
	sum, _, ok, _ := lastInterrupted(sums, "self", "/p", fl.sessionLogs())
	if !ok || sum.SessionID != "s499" {
		t.Fatalf("chose %v %v, want s499", sum.SessionID, ok)
	}
	if fl.reads > 2 {
		t.Errorf("read %d logs, want at most 2", fl.reads)
	}
	// Logs whose events' clock is not the file system's (an mtime before
	// the turn started) are all read, up to the bound.
	for id, l := range logs {
		l.mod = noticeT0.Add(-time.Hour)
		logs[id] = l
	}
	fl.reads = 0
	lastInterrupted(sums, "self", "/p", fl.sessionLogs())
	if fl.reads != maxInterruptedReads {
		t.Errorf("read %d logs, want the bound %d", fl.reads, maxInterruptedReads)
	}
}

// cutHere leaves the log of a session in cwd whose second turn was cut by
// a kill mid-reply: no turn/end.
func cutHere(t *testing.T, stateDir, id, cwd string) {
	t.Helper()
	l, err := session.Create(stateDir, id, session.SessionStart{SessionID: id, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []struct {
		typ  string
		data any
	}{
		{session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[{"type":"text","text":"Fix the flaky test"}]`), Text: "Fix the flaky test"}},
		{session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn", Title: "Fix the flaky test"}},
		{session.TypeTurnStart, session.TurnStart{Turn: 2, Prompt: json.RawMessage(`[{"type":"text","text":"TestRetryWait"}]`), Text: "TestRetryWait"}},
		{session.TypeStepStart, session.StepStart{Turn: 2, Step: 1}},
	} {
		if _, err := l.Append(ev.typ, ev.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// notices is what e was shown of interrupted sessions, as status tool
// calls or notices, each with the update that followed it.
func interruptedShown(e *editor) (shown []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, u := range e.updates {
		if u.Title != interruptedTitle {
			continue
		}
		next := "nothing"
		if i+1 < len(e.updates) {
			next = e.updates[i+1].SessionUpdate
		}
		shown = append(shown, u.SessionUpdate+" before "+next)
	}
	return shown
}

// A crash cut a session here; the next new session's first prompt says so
// before its reply, and records it; nothing else does: not its next
// prompt, not the next new session, not the cut session itself when
// opened again, not a new session in another directory.
func TestNoteInterrupted_OnceAtTheFirstPromptAfterACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cwd := filepath.Join(dir, "project")
		cutHere(t, dir, "sess_cut", cwd)
		a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("one"), text("two"), text("three"), text("four"), text("five")}}})
		newIn := func(cwd string) string {
			res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: cwd})
			if err != nil {
				t.Fatal(err)
			}
			return res.SessionID
		}
		promptIn := func(id, text string) []string {
			e := &editor{}
			if _, err := prompt1(t.Context(), a, id, text, e); err != nil {
				t.Fatalf("prompt %q: %v", text, err)
			}
			return interruptedShown(e)
		}
		elsewhere := newIn(filepath.Join(dir, "other"))
		if got := promptIn(elsewhere, "hi"); got != nil {
			t.Errorf("a new session in another directory was shown %v", got)
		}
		first := newIn(cwd)
		if got := promptIn(first, "hi"); !slices.Equal(got, []string{"tool_call before agent_message_chunk"}) {
			t.Errorf("first prompt of a new session here showed %v, want the status before the reply", got)
		}
		if got := promptIn(first, "and?"); got != nil {
			t.Errorf("its second prompt showed %v", got)
		}
		if got := promptIn(newIn(cwd), "hi"); got != nil {
			t.Errorf("the next new session showed %v", got)
		}
		if _, err := a.LoadSession(t.Context(), acp.LoadSessionRequest{SessionID: "sess_cut", Cwd: cwd}, &editor{}); err != nil {
			t.Fatal(err)
		}
		if got := promptIn("sess_cut", "go on"); got != nil {
			t.Errorf("the cut session itself showed %v", got)
		}

		// Recorded in the first new session's log, in its first turn.
		ld, err := session.Load(session.Path(dir, first))
		if err != nil {
			t.Fatal(err)
		}
		var recorded []session.Status
		for _, ev := range ld.Events {
			var st session.Status
			if ev.Type == session.TypeStatus && json.Unmarshal(ev.Data, &st) == nil {
				recorded = append(recorded, st)
			}
		}
		if len(recorded) != 1 || recorded[0].Turn != 1 || recorded[0].Title != interruptedTitle ||
			!strings.Contains(recorded[0].Detail, "“Fix the flaky test” (sess_cut)") || !strings.Contains(recorded[0].Detail, "/resume") {
			t.Errorf("recorded statuses %+v, want the notice of sess_cut in turn 1", recorded)
		}
	})
}

// A fork made while a turn ran (session/fork) copies the parent's
// finished turns, each dated when the fork was made: the fork started no
// turn then, and must not stand for the session used last here. A crash
// that cuts the parent's turn is still told at the next new session's
// first prompt (found by driving the binary: fork mid-turn, kill, new
// chat: nothing said).
func TestNoteInterrupted_AForkMadeDuringTheCutTurnHidesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		cwd := filepath.Join(dir, "project")
		cutHere(t, dir, "sess_cut", cwd)
		time.Sleep(time.Minute) // the fork is made a minute into the turn
		a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("one")}}})
		if _, err := a.ForkSession(t.Context(), acp.ForkSessionRequest{SessionID: "sess_cut", Cwd: cwd}); err != nil {
			t.Fatal(err)
		}
		res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: cwd})
		if err != nil {
			t.Fatal(err)
		}
		e := &editor{}
		if _, err := prompt1(t.Context(), a, res.SessionID, "hi", e); err != nil {
			t.Fatal(err)
		}
		if got := interruptedShown(e); !slices.Equal(got, []string{"tool_call before agent_message_chunk"}) {
			t.Errorf("first prompt of a new session here showed %v, want the notice of sess_cut", got)
		}
	})
}

// A session whose first turn was cut has no title in the index (titles
// are indexed when a turn ends): the notice takes it from the log.
func TestNoteInterrupted_FirstTurnCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		l, err := session.Create(dir, "sess_cut", session.SessionStart{SessionID: "sess_cut", Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[]`), Text: "Explain the index"}); err != nil {
			t.Fatal(err)
		}
		l.Close()
		a := testAgent(t, Config{StateDir: dir, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}}})
		res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		e := &capsEditor{caps: noticesCaps}
		if _, err := prompt1(t.Context(), a, res.SessionID, "hi", e); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, u := range e.updates {
			if u.Title == interruptedTitle {
				got = append(got, u.SessionUpdate+": "+u.Description)
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "notice: ") || !strings.Contains(got[0], "“Explain the index” (sess_cut)") {
			t.Errorf("shown %q, want one notice naming the session by its first prompt", got)
		}
	})
}

// What can't be read never fails or holds up the turn: each failure is a
// warning on stderr, and nothing is shown; a bug (a panic) too.
func TestNoteInterrupted_FailsOpen(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		logs sessionLogs
		want string
	}{
		{"a log can't be stat'ed", sessionLogs{modTime: func(string) (time.Time, error) { return time.Time{}, boom }}, "could not tell whether a session here was interrupted"},
		{"a log can't be read", sessionLogs{
			modTime:  func(string) (time.Time, error) { return noticeT0, nil },
			lastTurn: func(string) (session.LastTurn, error) { return session.LastTurn{}, boom },
		}, "could not tell whether a session here was interrupted"},
		{"a panic", sessionLogs{modTime: func(string) (time.Time, error) { panic("bug") }}, "looking for an interrupted session panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cutHere(t, dir, "sess_cut", dir)
			var logged bytes.Buffer
			var mu sync.Mutex
			a := New(Config{StateDir: dir, Model: "m", MaxTokens: 100, Provider: &script{answers: []func(context.Context, llm.Request) (llm.Stream, error){text("ok")}},
				Logger: zerolog.New(syncBuffer{&mu, &logged})})
			t.Cleanup(func() { a.Close() })
			res, err := a.NewSession(t.Context(), acp.NewSessionRequest{Cwd: dir})
			if err != nil {
				t.Fatal(err)
			}
			s, err := a.store.lookup(res.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			e := &editor{}
			noteInterruptedIn(context.Background(), newTurn(a, s, e, 1), tc.logs)
			if got := interruptedShown(e); got != nil {
				t.Errorf("shown %v", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if !strings.Contains(logged.String(), tc.want) || !strings.Contains(logged.String(), "boom") && tc.name != "a panic" {
				t.Errorf("logged %s, want %q", logged.String(), tc.want)
			}
		})
	}
}

type syncBuffer struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// The words: the title on one printable line, the time in the person's
// zone, and what to type in each client.
func TestInterruptedWords(t *testing.T) {
	defer func(l *time.Location) { time.Local = l }(time.Local)
	time.Local = time.UTC
	got := interruptedWords("sess_1", "Fix\x1b[31m the\n\ttest", noticeAt(0), noticeAt(5))
	want := "Rebound stopped at 09:00:00 UTC in the middle of “Fix [31m the test” (sess_1), in this directory. " +
		"This chat is a new session: the model does not have that conversation. To go on with it, open a new chat and, " +
		"before sending anything, type /resume in codecompanion.nvim; in an editor that lists past threads, open it there. " +
		"In a terminal, `rebound sessions` lists it."
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	long := printableTitle(strings.Repeat("é", 500))
	if n := len([]rune(long)); n != session.MaxTitleRunes {
		t.Errorf("a long title is %d characters, want %d", n, session.MaxTitleRunes)
	}
	if got := interruptedWords("sess_1", "", time.Time{}, noticeAt(5)); !strings.HasPrefix(got, "Rebound stopped earlier in the middle of a session (sess_1),") {
		t.Errorf("without title or time: %q", got)
	}
}
