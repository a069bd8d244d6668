package agent

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// sessionStore is the sessions this process holds, and their uses: it
// opens a session's log, or opens it again, takes its lock, catches up with
// what other processes appended, repairs a turn a dead process left open
// (acquire and its jobs), and lets go of it again (release, done); it
// bounds the open logs (logCache) and keeps the session index. It knows
// the configuration only through what it is given.
type sessionStore struct {
	mu       sync.Mutex
	sessions map[string]*sessionState
	// logs bounds the sessions' open logs (under mu).
	logs   *logCache[*sessionState]
	closed bool
	// index lists the sessions of the state directory (session/list).
	index *session.Index
	dir   stateDir
	menu  *configMenu // a session's options, as its log records them
	log   *zerolog.Logger
}

func newSessionStore(cfg *Config, dir stateDir, menu *configMenu) *sessionStore {
	st := &sessionStore{sessions: make(map[string]*sessionState), dir: dir, menu: menu, log: &cfg.Logger}
	st.logs = newLogCache(&st.mu, cfg.MaxOpenLogs, cfg.LogIdleTimeout, st.closeLocked)
	st.index = session.NewIndex(cfg.StateDir, func(err error) {
		st.log.Warn().Err(err).Msg("session index")
	})
	return st
}

// add holds s, a new session whose log l is open; started runs under the
// store's lock first (it starts the session's MCP servers, which close
// stops). It fails once the store is closed.
func (st *sessionStore) add(s *sessionState, l *session.Log, started func()) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return errAgentClosed
	}
	started()
	st.sessions[s.id] = s
	s.log = l
	st.logs.opened(s)
	st.logs.release(s)
	return nil
}

// closeLog closes s's log (closeLocked), taking the store's lock.
func (st *sessionStore) closeLog(s *sessionState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closeLocked(s)
}

// holding is the session this process holds by id, nil when none; the
// error is errAgentClosed once the store is closed.
func (st *sessionStore) holding(id string) (*sessionState, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errAgentClosed
	}
	return st.sessions[id], nil
}

// drop closes s's log and forgets s, unless another state took its id.
func (st *sessionStore) drop(s *sessionState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closeLocked(s)
	if st.sessions[s.id] == s {
		delete(st.sessions, s.id)
	}
}

// whileOpen runs f under the store's lock unless the store is closed, and
// reports whether it ran: what f sets, close sees.
func (st *sessionStore) whileOpen(f func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return false
	}
	f()
	return true
}

// whileHeld runs f under the store's lock while s is the session the
// store holds by its id (not closed or deleted meanwhile), and reports
// whether it ran.
func (st *sessionStore) whileHeld(s *sessionState, f func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || st.sessions[s.id] != s {
		return false
	}
	f()
	return true
}

// state returns the session's state, making an empty one (its log not yet
// opened) for a session this process has not seen.
func (st *sessionStore) state(id string) (*sessionState, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errAgentClosed
	}
	s, ok := st.sessions[id]
	if !ok {
		s = &sessionState{id: id}
		st.sessions[id] = s
	}
	return s, nil
}

// lookup returns the session this process holds by id; not found when it
// holds none (session/load or resume makes one, state).
func (st *sessionStore) lookup(id string) (*sessionState, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.sessions[id]
	if !ok {
		return nil, acp.NewSessionNotFound(id)
	}
	return s, nil
}

// held fails unless s is still the session this process holds by its id:
// it may have been closed or deleted, or the agent shut down, meanwhile.
func (st *sessionStore) held(s *sessionState) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return errAgentClosed
	}
	if st.sessions[s.id] != s {
		return acp.NewSessionNotFound(s.id)
	}
	return nil
}

// acquire makes the session's log open and its events up to date for the
// caller, who holds s.turnMu, until release. A closed log is opened again.
// Then the log's lock is taken, and what another process appended since
// this one last read the log is read (the whole log again if it changed
// otherwise): with write set (a turn, an option) a lock held elsewhere
// fails the use with -32003, and a lock taken is held until release (the
// use is then the writer, s.writer); without (a load, a resume) the log is
// then read without it, and nothing is written. With the lock, a turn a
// dead process left open is closed; without write, the lock is then let
// go of before acquire returns. A log broken by a failed write (a full
// disk) is closed and opened again, which repairs its tail: a session
// recovers once the disk does.
func (st *sessionStore) acquire(s *sessionState, write bool) (err error) {
	l, err := st.use(s)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			st.release(s)
		}
	}()
	l, why := st.dropBroken(s, l)
	if l == nil {
		if l, err = st.reopen(s); err != nil {
			return err
		}
	}
	up, err := st.lockLog(s, l, write)
	if err != nil {
		return err
	}
	changed := st.take(s, l, up) // what the others appended
	if s.use.locked && up.OpenTurn != 0 {
		if err := st.repairInterrupted(s, l, up, why); err != nil {
			return err
		}
	}
	if changed {
		// The index may be behind the log: its writer may have died, or
		// been a Rebound without an index.
		st.putSummary(s.summary())
	}
	return st.becomeUser(s, l, write)
}

// use marks s in use until release, so its log is not closed under it,
// and returns the log if it is open.
func (st *sessionStore) use(s *sessionState) (*session.Log, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errAgentClosed
	}
	st.logs.use(s)
	return s.log, nil
}

// dropBroken closes s's open log l when memory may not match the file (a
// turn panicked: s.use.reload) or a write failed (a full disk): reading it
// again repairs its tail. It returns l, or nil once closed, with what ended
// the turn this process left open when it did.
func (st *sessionStore) dropBroken(s *sessionState, l *session.Log) (*session.Log, []byte) {
	reload := s.use.reload
	s.use.reload = false
	if l == nil || (!reload && l.Err() == nil) {
		return l, nil
	}
	why := panicFailure
	if werr := l.Err(); werr != nil {
		st.log.Warn().Err(werr).Str("session", s.id).Msg("reopening a session log after a failed write")
		why = mustJSON(recovery.Failure{Code: recovery.Aborted, Message: "this turn could not be recorded: " + werr.Error()})
	}
	st.mu.Lock()
	st.closeLocked(s)
	st.mu.Unlock()
	return nil, why
}

// reopen opens s's log, closed or never opened, and reads all of it.
func (st *sessionStore) reopen(s *sessionState) (*session.Log, error) {
	log, loaded, err := session.OpenShared(st.dir.path, s.id)
	if err != nil {
		if !s.use.loaded {
			st.forget(s)
		}
		return nil, st.dir.openError(s.id, err)
	}
	s.use.loaded = true
	st.take(s, log, loaded)
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		log.Close()
		return nil, errAgentClosed
	}
	if _, ok := st.sessions[s.id]; !ok {
		st.sessions[s.id] = s // forgotten by a load that failed meanwhile
	}
	s.log = log
	st.logs.opened(s)
	st.mu.Unlock()
	return log, nil
}

// lockLog takes the lock of s's log l, so no other process writes it, and
// reads what they appended: s.use.locked says whether it was taken. With write,
// a lock held elsewhere fails the use; without, what the writer has written
// whole is read without the lock. A log removed by another process, or
// unreadable now, is closed: the next use opens it afresh, or finds it gone.
func (st *sessionStore) lockLog(s *sessionState, l *session.Log, write bool) (*session.Loaded, error) {
	up, err := l.Lock()
	s.use.locked = err == nil
	if !write && errors.Is(err, session.ErrLocked) {
		up, err = l.Refresh()
	}
	if err == nil {
		return up, nil
	}
	if !errors.Is(err, session.ErrLocked) {
		st.mu.Lock()
		st.closeLocked(s)
		st.mu.Unlock()
		if errors.Is(err, session.ErrNotFound) {
			s.mcp.close()
			st.forget(s)
		}
	}
	return nil, st.dir.openError(s.id, err)
}

// repairInterrupted closes the turn up found open: the process that ran it
// died mid-turn (or this one could not record its end: why). Called with
// the lock held, so nobody else is running it; closing it keeps the log's
// invariant, and the next turn can start.
func (st *sessionStore) repairInterrupted(s *sessionState, l *session.Log, up *session.Loaded, why []byte) error {
	shown, warnings, err := session.ReadShown(l.Path())
	for _, w := range warnings {
		st.log.Warn().Str("session", s.id).Msg(w)
	}
	if err != nil {
		// What the user saw may be lost; the turn is closed anyway.
		st.log.Error().Err(err).Str("session", s.id).Msg("could not read the text shown of the interrupted turn")
	}
	if err := s.closeInterrupted(up, why, shown); err != nil {
		return st.dir.logError(s.id, fmt.Errorf("close interrupted turn %d of session %s: %w", up.OpenTurn, s.id, err))
	}
	if err := l.ClearShown(); err != nil {
		st.log.Warn().Err(err).Str("session", s.id).Msg("could not empty the shown journal")
	}
	st.log.Warn().Str("session", s.id).Int("turn", up.OpenTurn).Msg("closed a turn left open")
	return nil
}

// becomeUser ends acquire. A load or resume writes nothing more: what it
// replays is what was read under the lock (whole and repaired, no writer
// midway), now in memory, so the lock is let go of at once, and an editor
// slow to read the replay keeps no other process from writing the session.
// A use that holds the lock is the writer, which a waiting optionRecorder.set
// writes through.
func (st *sessionStore) becomeUser(s *sessionState, l *session.Log, write bool) error {
	if s.use.locked && !write {
		err := l.Unlock()
		s.use.locked = false
		if err != nil {
			return st.dir.logError(s.id, fmt.Errorf("let go of session %s: %w", s.id, err))
		}
	}
	s.options.become(s.use.locked)
	return nil
}

// take brings what s keeps of its log up to date with what was read from
// it (all of it, or what others appended: Loaded.Tail): the events and
// what is derived from them, the permission rules, options, tool call ids
// and title. It reports whether anything was read. Called under s.turnMu.
func (st *sessionStore) take(s *sessionState, l *session.Log, ld *session.Loaded) bool {
	for _, w := range ld.Warnings {
		st.log.Warn().Str("session", s.id).Str("path", l.Path()).Msg(w)
	}
	if ld.Tail && len(ld.Events) == 0 {
		return false
	}
	if ld.Tail {
		st.takeTail(s, ld)
	} else {
		st.takeWhole(s, ld)
	}
	ld.Data = nil
	return true
}

// takeWhole replaces what s keeps with what ld read: the whole log.
func (st *sessionStore) takeWhole(s *sessionState, ld *session.Loaded) {
	s.events, s.hist = ld.Events, derivedHistory(ld.Events, ld.Data)
	s.rules, s.toolIDs = session.PermissionRules(s.events), nil
	s.options.load(st.menu.fromLog(s.events)) // the options its log records
	sum, titled := session.Summarize(s.events)
	s.listing.home, s.listing.title, s.listing.titled = sum.Cwd, sum.Title, titled
	if s.dirs.cwd == "" && filepath.IsAbs(s.listing.home) {
		// Nobody said where to work (a session reopened on use,
		// reopen.go): where the session was made.
		s.dirs.cwd = s.listing.home
	}
}

// derivedHistory is the history of events, derived from data, what the
// read decoded of them: nothing is decoded twice. It is nil when data is
// not all of them, or when the derivation refuses the log: it is derived
// again when next needed, which says what is wrong.
func derivedHistory(events []session.Event, data []any) *history {
	if len(data) != len(events) {
		return nil
	}
	h := newHistory()
	h.grow(events)
	for i, ev := range events {
		if h.add(ev, data[i]) != nil {
			return nil
		}
	}
	return h
}

// takeTail adds to what s keeps what ld read: what another process
// appended. What is derived goes on from it.
func (st *sessionStore) takeTail(s *sessionState, ld *session.Loaded) {
	s.events = append(s.events, ld.Events...)
	for i, ev := range ld.Events {
		var data any
		if len(ld.Data) == len(ld.Events) {
			data = ld.Data[i]
		}
		s.extend(ev, data)
	}
	if s.rules == nil {
		s.rules = map[string]string{}
	}
	maps.Copy(s.rules, session.PermissionRules(ld.Events)) // the last answer for a scope wins
	if s.toolIDs != nil {
		maps.Copy(s.toolIDs, session.ToolCallIDs(ld.Events))
	}
	s.options.load(st.menu.fromLog(s.events)) // the options its log records
	// The title is the last one recorded, else made from the first prompt.
	if sum, titled := session.Summarize(ld.Events); titled {
		s.listing.title, s.listing.titled = sum.Title, true
	} else if !s.listing.titled {
		// Rare: the session's first turn never recorded a title.
		sum, _ := session.Summarize(s.events)
		s.listing.title = sum.Title
	}
}

// forget drops a session whose log was never opened (a session/load of a
// session that does not exist, or can't be read).
func (st *sessionStore) forget(s *sessionState) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.sessions[s.id] == s {
		delete(st.sessions, s.id)
	}
}

// closeLocked closes s's log and forgets its events until the next acquire
// reads them again. Called under st.mu; st.logs calls it for a session not
// in use, once it has let go of it.
func (st *sessionStore) closeLocked(s *sessionState) {
	st.logs.closed(s)
	if err := s.closeLog(); err != nil {
		st.log.Warn().Err(err).Str("session", s.id).Msg("closing a session log failed")
	}
}

// release ends a use that acquire began: what was appended is written and
// synced and the lock let go of, so another process may write the session;
// the log stays open for the next prompt until it has been idle for
// LogIdleTimeout.
func (st *sessionStore) release(s *sessionState) {
	st.mu.Lock()
	l := s.log
	st.mu.Unlock()
	if l != nil && s.use.locked {
		// Outside st.mu: Unlock syncs the file.
		if err := l.Unlock(); err != nil {
			st.log.Warn().Err(err).Str("session", s.id).Msg("writing the session log before letting go of it failed")
		}
	}
	s.use.locked = false
	st.mu.Lock()
	defer st.mu.Unlock()
	st.logs.release(s)
}

// done ends a use of s begun with turnMu and a successful acquire: the
// records optionRecorder.set wrote through it join events, then the log is released
// and turnMu let go of.
func (st *sessionStore) done(s *sessionState) {
	s.takeWritten(s.options.stop()) // before the lock goes: nothing is written through s now
	st.release(s)
	s.unlockTurn()
}

// putSummary writes a session's summary to the index. The index is a
// cache of the logs: a failure is logged, never the request's.
func (st *sessionStore) putSummary(sum session.Summary) {
	if err := st.index.Put(sum); err != nil {
		st.log.Warn().Err(err).Str("session", sum.SessionID).Msg("session index")
	}
}

// close closes every open session log, and stops every session's MCP
// servers; the store holds no session after it.
func (st *sessionStore) close() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	var errs []error
	var stopping sync.WaitGroup
	defer stopping.Wait() // no server process outlives the agent
	for id, s := range st.sessions {
		stopping.Go(s.mcp.close)
		if s.log != nil {
			errs = append(errs, s.log.Close())
			s.log = nil
		}
		delete(st.sessions, id)
	}
	st.logs.reset()
	return errors.Join(errs...)
}

// open are the sessions this process holds.
func (st *sessionStore) open() []*sessionState {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*sessionState, 0, len(st.sessions))
	for _, s := range st.sessions {
		out = append(out, s)
	}
	return out
}
