package agent

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// acquirer begins and ends a use of a session (a turn, a load, a resume,
// an option's change): acquire opens its log, or opens it again, takes
// its lock, catches up with what other processes appended (catchUp),
// repairs a turn a dead process left open; done lets go of it again. What
// is open and in use is holder's (sessionHolder); the log files are in dir.
type acquirer struct {
	holder  *sessionHolder
	dir     stateDir
	catchUp catchUp
	// indexed puts a session's summary in the index (sessionStore.putSummary).
	indexed func(session.Summary)
	log     *zerolog.Logger
}

// acquire makes the session's log open and its events up to date for the
// caller, who holds s.turnMu, until done (or, on a failure, the use is
// released already). A closed log is opened again. Then the log's lock is
// taken, and what another process appended since this one last read the
// log is read (the whole log again if it changed otherwise): with write
// set (a turn, an option) a lock held elsewhere fails the use with
// -32003, and a lock taken is held until release (the use is then the
// writer, s.writer); without (a load, a resume) the log is then read
// without it, and nothing is written. With the lock, a turn a dead
// process left open is closed; without write, the lock is then let go of
// before acquire returns. A log broken by a failed write (a full disk) is
// closed and opened again, which repairs its tail: a session recovers
// once the disk does.
func (a *acquirer) acquire(s *sessionState, write bool) (err error) {
	l, err := a.holder.use(s)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			a.holder.release(s)
		}
	}()
	l, why := a.dropBroken(s, l)
	if l == nil {
		if l, err = a.reopen(s); err != nil {
			return err
		}
	}
	up, err := a.lockLog(s, l, write)
	if err != nil {
		return err
	}
	changed := a.catchUp.take(s, l.Path(), up) // what the others appended
	if s.use.locked && up.OpenTurn != 0 {
		if err := a.repairInterrupted(s, l, up, why); err != nil {
			return err
		}
	}
	if changed {
		// The index may be behind the log: its writer may have died, or
		// been a Rebound without an index.
		a.indexed(s.summary())
	}
	return a.becomeUser(s, l, write)
}

// dropBroken closes s's open log l when memory may not match the file (a
// turn panicked: s.use.reload) or a write failed (a full disk): reading it
// again repairs its tail. It returns l, or nil once closed, with what ended
// the turn this process left open when it did.
func (a *acquirer) dropBroken(s *sessionState, l *session.Log) (*session.Log, []byte) {
	reload := s.use.reload
	s.use.reload = false
	if l == nil || (!reload && l.Err() == nil) {
		return l, nil
	}
	why := panicFailure
	if werr := l.Err(); werr != nil {
		a.log.Warn().Err(werr).Str("session", s.id).Msg("reopening a session log after a failed write")
		why = mustJSON(recovery.Failure{Code: recovery.Aborted, Message: "this turn could not be recorded: " + werr.Error()})
	}
	a.holder.closeLog(s)
	return nil, why
}

// reopen opens s's log, closed or never opened, and reads all of it.
func (a *acquirer) reopen(s *sessionState) (*session.Log, error) {
	log, loaded, err := session.OpenShared(a.dir.path, s.id)
	if err != nil {
		if !s.use.loaded {
			a.holder.forget(s)
		}
		return nil, a.dir.openError(s.id, err)
	}
	s.use.loaded = true
	a.catchUp.take(s, log.Path(), loaded)
	if err := a.holder.opened(s, log); err != nil {
		return nil, err
	}
	return log, nil
}

// lockLog takes the lock of s's log l, so no other process writes it, and
// reads what they appended: s.use.locked says whether it was taken. With write,
// a lock held elsewhere fails the use; without, what the writer has written
// whole is read without the lock. A log removed by another process, or
// unreadable now, is closed: the next use opens it afresh, or finds it gone.
func (a *acquirer) lockLog(s *sessionState, l *session.Log, write bool) (*session.Loaded, error) {
	up, err := l.Lock()
	s.use.locked = err == nil
	if !write && errors.Is(err, session.ErrLocked) {
		up, err = l.Refresh()
	}
	if err == nil {
		return up, nil
	}
	if !errors.Is(err, session.ErrLocked) {
		a.holder.closeLog(s)
		if errors.Is(err, session.ErrNotFound) {
			s.mcp.close()
			a.holder.forget(s)
		}
	}
	return nil, a.dir.openError(s.id, err)
}

// repairInterrupted closes the turn up found open: the process that ran it
// died mid-turn (or this one could not record its end: why). Called with
// the lock held, so nobody else is running it; closing it keeps the log's
// invariant, and the next turn can start.
func (a *acquirer) repairInterrupted(s *sessionState, l *session.Log, up *session.Loaded, why []byte) error {
	shown, warnings, err := session.ReadShown(l.Path())
	for _, w := range warnings {
		a.log.Warn().Str("session", s.id).Msg(w)
	}
	if err != nil {
		// What the user saw may be lost; the turn is closed anyway.
		a.log.Error().Err(err).Str("session", s.id).Msg("could not read the text shown of the interrupted turn")
	}
	if err := s.closeInterrupted(up, why, shown); err != nil {
		return a.dir.logError(s.id, fmt.Errorf("close interrupted turn %d of session %s: %w", up.OpenTurn, s.id, err))
	}
	if err := l.ClearShown(); err != nil {
		a.log.Warn().Err(err).Str("session", s.id).Msg("could not empty the shown journal")
	}
	a.log.Warn().Str("session", s.id).Int("turn", up.OpenTurn).Msg("closed a turn left open")
	return nil
}

// becomeUser ends acquire. A load or resume writes nothing more: what it
// replays is what was read under the lock (whole and repaired, no writer
// midway), now in memory, so the lock is let go of at once, and an editor
// slow to read the replay keeps no other process from writing the session.
// A use that holds the lock is the writer, which a waiting optionRecorder.set
// writes through.
func (a *acquirer) becomeUser(s *sessionState, l *session.Log, write bool) error {
	if s.use.locked && !write {
		err := l.Unlock()
		s.use.locked = false
		if err != nil {
			return a.dir.logError(s.id, fmt.Errorf("let go of session %s: %w", s.id, err))
		}
	}
	s.options.become(s.use.locked)
	return nil
}

// done ends a use of s begun with turnMu and a successful acquire: the
// records optionRecorder.set wrote through it join events, then the log is
// released (sessionHolder.release) and turnMu let go of.
func (a *acquirer) done(s *sessionState) {
	s.takeWritten(s.options.stop()) // before the lock goes: nothing is written through s now
	a.holder.release(s)
	s.unlockTurn()
}
