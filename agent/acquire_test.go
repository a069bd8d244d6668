package agent

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/session"
)

// acquirer alone, on logs in a temporary directory, with a sessionHolder
// and a fake index that records what it is given: no Agent.

type acquireRig struct {
	holder  *sessionHolder
	a       *acquirer
	dir     string
	indexed []session.Summary
}

func newAcquireRig(t *testing.T) *acquireRig {
	t.Helper()
	r := &acquireRig{}
	r.holder, r.dir = newTestHolder(t, 4)
	nop := zerolog.Nop()
	r.a = &acquirer{holder: r.holder, dir: stateDir{path: r.dir},
		catchUp: catchUp{fromLog: (&configMenu{model: "m"}).fromLog, log: &nop},
		indexed: func(sum session.Summary) { r.indexed = append(r.indexed, sum) }, log: &nop}
	return r
}

// acquire begins a use of session id as a turn (write) or a load does.
func (r *acquireRig) acquire(t *testing.T, id string, write bool) (*sessionState, error) {
	t.Helper()
	s, err := r.holder.state(id)
	if err != nil {
		t.Fatal(err)
	}
	s.turnMu.Lock()
	if err := r.a.acquire(s, write); err != nil {
		s.unlockTurn()
		return s, err
	}
	return s, nil
}

// The index hears of a session whenever a use's lock read what another
// process appended (the index may be behind the log), and only then.
func TestAcquirer_IndexesWhatItRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	r := newAcquireRig(t)
	createLog(t, r.dir, "sess_1", nil)
	s, err := r.acquire(t, "sess_1", true)
	if err != nil {
		t.Fatal(err)
	}
	r.a.done(s)
	// (The open's own read is not counted: a log the index lacks is
	// listed by the index's next List, session.Index.)
	n := len(r.indexed)
	if s, err = r.acquire(t, "sess_1", true); err != nil {
		t.Fatal(err)
	}
	r.a.done(s)
	if len(r.indexed) != n {
		t.Errorf("a use that read nothing new indexed the session: %+v", r.indexed[n:])
	}
	other, _, err := session.OpenShared(r.dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Lock(); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendSync(session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn", Title: "Elsewhere"}); err != nil {
		t.Fatal(err)
	}
	other.Close()
	if s, err = r.acquire(t, "sess_1", true); err != nil {
		t.Fatal(err)
	}
	r.a.done(s)
	if len(r.indexed) != n+1 || r.indexed[n].SessionID != "sess_1" || r.indexed[n].Cwd != "/p" || r.indexed[n].Title != "Elsewhere" {
		t.Errorf("after another's turn the index was given %+v", r.indexed[n:])
	}
}

// A load or resume reads under the lock and lets go of it before acquire
// returns: another process may write while the load is replayed; a turn
// holds it until done.
func TestAcquirer_ReadLetsGoOfTheLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	r := newAcquireRig(t)
	createLog(t, r.dir, "sess_1", nil)
	other, _, err := session.OpenShared(r.dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	s, err := r.acquire(t, "sess_1", false)
	if err != nil {
		t.Fatal(err)
	}
	if s.use.locked || s.options.writer {
		t.Errorf("a load holds the lock (%v) or is the writer (%v)", s.use.locked, s.options.writer)
	}
	if _, err := other.Lock(); err != nil {
		t.Errorf("another's lock during a load = %v", err)
	}
	if err := other.Unlock(); err != nil {
		t.Fatal(err)
	}
	r.a.done(s)

	if s, err = r.acquire(t, "sess_1", true); err != nil {
		t.Fatal(err)
	}
	if !s.use.locked || !s.options.writer {
		t.Errorf("a turn: locked %v, writer %v; want both", s.use.locked, s.options.writer)
	}
	if _, err := other.Lock(); !errors.Is(err, session.ErrLocked) {
		t.Errorf("another's lock during a turn = %v, want ErrLocked", err)
	}
	r.a.done(s)
	if _, err := other.Lock(); err != nil {
		t.Errorf("another's lock after the turn = %v", err)
	}
}

// A turn that panicked (s.use.reload) has its log closed and read again by
// the next use, which closes the turn it left open with the panic's
// failure, not "the process ended".
func TestAcquirer_ReloadAfterAPanic(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	r := newAcquireRig(t)
	createLog(t, r.dir, "sess_1", nil)
	s, err := r.acquire(t, "sess_1", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.appendSync(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	first := s.log
	s.use.reload = true // as endPanicked sets it
	r.a.done(s)

	if s, err = r.acquire(t, "sess_1", true); err != nil {
		t.Fatal(err)
	}
	defer r.a.done(s)
	if s.log == first {
		t.Error("the log was not opened again")
	}
	last := s.events[len(s.events)-1]
	var end session.TurnEnd
	if last.Type != session.TypeTurnEnd || session.Unmarshal(last.Data, &end) != nil || !end.Interrupted || !bytes.Equal(end.Error, panicFailure) {
		t.Errorf("the turn left open ended with %s %s; want an interrupted turn/end with the panic's failure", last.Type, last.Data)
	}
}

// A session/load of a session with no log forgets the state it made; an
// acquire once the holder is closed fails and leaves no log open.
func TestAcquirer_NoLog(t *testing.T) {
	r := newAcquireRig(t)
	if _, err := r.acquire(t, "sess_none", false); !isNotFound(err) {
		t.Errorf("acquire of a session with no log = %v, want not found", err)
	}
	if _, err := r.holder.lookup("sess_none"); err == nil {
		t.Error("the state of a session with no log is still held")
	}
	createLog(t, r.dir, "sess_1", nil)
	s, _ := r.holder.state("sess_1")
	r.holder.close()
	s.turnMu.Lock()
	defer s.unlockTurn()
	if err := r.a.acquire(s, true); err != errAgentClosed || s.log != nil {
		t.Errorf("acquire after close = %v, log open %v", err, s.log != nil)
	}
}
