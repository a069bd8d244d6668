package agent

import (
	"errors"
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// The session store alone, on logs in a temporary state directory, with no
// Agent: another Rebound process is a session.Log opened on the same file.

func newTestStore(t *testing.T) (*sessionStore, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := &Config{StateDir: dir, Model: "m", MaxOpenLogs: 4, LogIdleTimeout: -1, Logger: zerolog.Nop()}
	st := newSessionStore(cfg, stateDir{path: dir}, &configMenu{model: "m"})
	t.Cleanup(func() { st.close() })
	return st, dir
}

// createLog makes session id's log as another process would, and lets go
// of it.
func createLog(t *testing.T, dir, id string, more func(l *session.Log)) {
	t.Helper()
	l, err := session.Create(dir, id, session.SessionStart{SessionID: id, Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if more != nil {
		more(l)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// use acquires s as a turn does, and ends the use.
func use(t *testing.T, st *sessionStore, s *sessionState, write bool) {
	t.Helper()
	s.turnMu.Lock()
	if err := st.acquire(s, write); err != nil {
		s.unlockTurn()
		t.Fatalf("acquire: %v", err)
	}
	st.done(s)
}

// acquire opens a log this process has not seen, reads what another
// process appended since at each later use, and takes the options it
// records; a use that writes held the lock, and let go of it at done.
func TestSessionStore_AcquireCatchesUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	st, dir := newTestStore(t)
	createLog(t, dir, "sess_1", nil)
	s, err := st.state("sess_1")
	if err != nil {
		t.Fatal(err)
	}
	use(t, st, s, true)
	if len(s.events) != 1 || s.use.locked || s.options.writer {
		t.Fatalf("after the first use: %d events, locked %v, writer %v; want 1, false, false", len(s.events), s.use.locked, s.options.writer)
	}
	other, _, err := session.Open(dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendSync(session.TypeConfig, session.Config{ConfigID: ModelConfigID, Value: "other"}); err != nil {
		t.Fatal(err)
	}
	// While the other holds the lock, a use that writes is refused; one
	// that reads is not.
	s.turnMu.Lock()
	err = st.acquire(s, true)
	s.unlockTurn()
	if re, ok := errors.AsType[*acp.RequestError](err); !ok || re.Code != acp.CodeSessionBusy {
		t.Errorf("acquire to write while another process writes = %v, want session busy", err)
	}
	use(t, st, s, false)
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	use(t, st, s, true)
	if len(s.events) != 2 || s.current().model != "other" {
		t.Errorf("after the other's record: %d events, model %q; want 2, other", len(s.events), s.current().model)
	}
}

// A turn a dead process left open is closed by the next use that holds
// the lock, so the log keeps its invariants; a use that only reads leaves
// it for that one.
func TestSessionStore_RepairsATurnLeftOpen(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	st, dir := newTestStore(t)
	createLog(t, dir, "sess_1", func(l *session.Log) {
		if _, err := l.AppendSync(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	})
	s, err := st.state("sess_1")
	if err != nil {
		t.Fatal(err)
	}
	use(t, st, s, true)
	last := s.events[len(s.events)-1]
	var end session.TurnEnd
	if last.Type != session.TypeTurnEnd || session.Unmarshal(last.Data, &end) != nil || !end.Interrupted || end.Turn != 1 {
		t.Fatalf("the last event is %s %s; want the interrupted turn's turn/end", last.Type, last.Data)
	}
	if _, err := session.Load(session.Path(dir, "sess_1")); err != nil {
		t.Errorf("the repaired log does not load: %v", err)
	}
}

// A session dropped (closed or deleted) or a store closed runs nothing
// for whoever still holds the session's state.
func TestSessionStore_WhileHeld(t *testing.T) {
	st, dir := newTestStore(t)
	createLog(t, dir, "sess_1", nil)
	s, err := st.state("sess_1")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	if !st.whileHeld(s, func() { ran++ }) || ran != 1 {
		t.Fatalf("whileHeld of a held session ran %d times", ran)
	}
	st.drop(s)
	if st.whileHeld(s, func() { ran++ }) || ran != 1 {
		t.Error("whileHeld ran for a dropped session")
	}
	if got, err := st.holding("sess_1"); got != nil || err != nil {
		t.Errorf("holding a dropped session = %v, %v; want none", got, err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	if st.whileOpen(func() { ran++ }) || ran != 1 {
		t.Error("whileOpen ran after close")
	}
	if _, err := st.holding("sess_1"); err != errAgentClosed {
		t.Errorf("holding after close = %v, want errAgentClosed", err)
	}
}
