package agent

import (
	"errors"
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// sessionHolder alone, on logs in a temporary directory, opened here as
// acquirer would: no acquire, no Agent.

func newTestHolder(t *testing.T, max int) (*sessionHolder, string) {
	t.Helper()
	nop := zerolog.Nop()
	h := newSessionHolder(max, -1, &nop)
	t.Cleanup(func() { h.close() })
	return h, t.TempDir()
}

// openFor begins a use of session id as acquire does (state, use, open,
// opened) on a log made for it, and returns its state.
func openFor(t *testing.T, h *sessionHolder, dir, id string) *sessionState {
	t.Helper()
	createLog(t, dir, id, nil)
	s, err := h.state(id)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := h.use(s); err != nil || l != nil {
		t.Fatalf("use of a session never opened = %v, %v; want no log", l, err)
	}
	l, ld, err := session.OpenShared(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	s.events = ld.Events
	if err := h.opened(s, l); err != nil {
		t.Fatal(err)
	}
	return s
}

// At most max logs stay open once released, the least recently used idle
// one closed first, its events forgotten; a log in use is never closed
// under its user, and a closed one's session is still held.
func TestSessionHolder_BoundsOpenLogs(t *testing.T) {
	h, dir := newTestHolder(t, 1)
	a := openFor(t, h, dir, "sess_a")
	b := openFor(t, h, dir, "sess_b") // a is in use: both stay open
	if a.log == nil || b.log == nil {
		t.Fatalf("open while in use: a %v, b %v", a.log != nil, b.log != nil)
	}
	h.release(b)
	h.release(a) // two open, one allowed: b, used least recently, closes
	if a.log == nil || b.log != nil || b.events != nil {
		t.Errorf("after both released: a open %v, b open %v with %d events; want a open, b closed and forgotten", a.log != nil, b.log != nil, len(b.events))
	}
	if got, err := h.lookup("sess_b"); got != b || err != nil {
		t.Errorf("a session whose log closed is no longer held: %v, %v", got, err)
	}
	if l, err := h.use(b); l != nil || err != nil {
		t.Errorf("use of a closed log = %v, %v; want none, to open again", l, err)
	}
}

// A log opened once the holder is closed is closed, and the use fails; a
// session forgotten meanwhile (a load that failed) is held again.
func TestSessionHolder_Opened(t *testing.T) {
	h, dir := newTestHolder(t, 4)
	createLog(t, dir, "sess_1", nil)
	s, _ := h.state("sess_1")
	h.forget(s)
	if _, err := h.lookup("sess_1"); err == nil {
		t.Fatal("a forgotten session is held")
	}
	l, _, err := session.OpenShared(dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.opened(s, l); err != nil {
		t.Fatal(err)
	}
	if got, err := h.lookup("sess_1"); got != s || err != nil || s.log != l {
		t.Errorf("after opened: held %v, %v, log set %v", got, err, s.log == l)
	}

	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	late, _, err := session.OpenShared(dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	t2 := &sessionState{id: "sess_1"}
	if err := h.opened(t2, late); err != errAgentClosed {
		t.Errorf("opened after close = %v, want errAgentClosed", err)
	}
	if t2.log != nil {
		t.Error("a closed holder kept a log")
	}
	if _, err := late.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "x"}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("the log opened after close was left open: append = %v", err)
	}
}

// release lets go of the log's lock a use held, so another process may
// write; the log stays open for the next use.
func TestSessionHolder_ReleaseLetsGoOfTheLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	h, dir := newTestHolder(t, 4)
	s := openFor(t, h, dir, "sess_1")
	if _, err := s.log.Lock(); err != nil {
		t.Fatal(err)
	}
	s.use.locked = true
	other, _, err := session.OpenShared(dir, "sess_1")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Lock(); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("another's lock while this one holds it = %v, want ErrLocked", err)
	}
	h.release(s)
	if s.use.locked || s.log == nil {
		t.Errorf("after release: locked %v, open %v; want not locked, open", s.use.locked, s.log != nil)
	}
	if _, err := other.Lock(); err != nil {
		t.Errorf("another's lock after release = %v", err)
	}
}

// Which session an id names: state makes one, lookup finds only one held,
// held fails once it was dropped or replaced, and everything fails (or
// runs nothing) once the holder is closed.
func TestSessionHolder_Names(t *testing.T) {
	h, _ := newTestHolder(t, 4)
	if _, err := h.lookup("sess_1"); !isNotFound(err) {
		t.Errorf("lookup of an unknown id = %v, want not found", err)
	}
	s, _ := h.state("sess_1")
	if again, _ := h.state("sess_1"); again != s {
		t.Error("state made a second state for one id")
	}
	if err := h.held(s); err != nil {
		t.Errorf("held of a held session = %v", err)
	}
	h.drop(s)
	if err := h.held(s); !isNotFound(err) {
		t.Errorf("held of a dropped session = %v, want not found", err)
	}
	newer, _ := h.state("sess_1")
	h.forget(s) // a stale state forgets nothing
	if got, _ := h.lookup("sess_1"); got != newer {
		t.Error("forgetting a stale state dropped the newer one")
	}
	if len(h.open()) != 1 {
		t.Errorf("open = %d sessions, want 1", len(h.open()))
	}
	h.close()
	if _, err := h.state("sess_2"); err != errAgentClosed {
		t.Errorf("state after close = %v", err)
	}
	if _, err := h.use(newer); err != errAgentClosed {
		t.Errorf("use after close = %v", err)
	}
	if err := h.add(&sessionState{id: "sess_3"}, nil, func() { t.Error("started ran after close") }); err != errAgentClosed {
		t.Errorf("add after close = %v", err)
	}
	if len(h.open()) != 0 {
		t.Error("a closed holder holds sessions")
	}
}

func isNotFound(err error) bool {
	re, ok := errors.AsType[*acp.RequestError](err)
	return ok && re.Code == acp.NewSessionNotFound("x").Code
}
