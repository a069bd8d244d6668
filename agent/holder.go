package agent

import (
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// sessionHolder is the sessions this process holds, by id, and their open
// logs: which is open, which in use, bounded by logs (logCache), under one
// lock, mu. It opens no log and reads none (acquirer does): it only
// records what is open, closes what the cache or its callers let go of,
// and answers which session an id names. Once closed, it holds none.
type sessionHolder struct {
	mu       sync.Mutex
	sessions map[string]*sessionState
	// logs bounds the sessions' open logs (under mu).
	logs   *logCache[*sessionState]
	closed bool
	log    *zerolog.Logger
}

// newSessionHolder holds none yet; at most max logs stay open when idle,
// and none idle for longer than idle (<= 0: no limit of time).
func newSessionHolder(max int, idle time.Duration, log *zerolog.Logger) *sessionHolder {
	h := &sessionHolder{sessions: make(map[string]*sessionState), log: log}
	h.logs = newLogCache(&h.mu, max, idle, h.closeLocked)
	return h
}

// add holds s, a new session whose log l is open; started runs under the
// lock first (it starts the session's MCP servers, which close stops). It
// fails once closed.
func (h *sessionHolder) add(s *sessionState, l *session.Log, started func()) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errAgentClosed
	}
	started()
	h.sessions[s.id] = s
	s.log = l
	h.logs.opened(s)
	h.logs.release(s)
	return nil
}

// opened records log, just opened by a use of s (acquirer.reopen), as s's
// open log, holding s again if a load that failed meanwhile forgot it.
// Once closed, it closes log and fails.
func (h *sessionHolder) opened(s *sessionState, log *session.Log) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		log.Close()
		return errAgentClosed
	}
	if _, ok := h.sessions[s.id]; !ok {
		h.sessions[s.id] = s // forgotten by a load that failed meanwhile
	}
	s.log = log
	h.logs.opened(s)
	h.mu.Unlock()
	return nil
}

// closeLog closes s's log (closeLocked), taking the lock.
func (h *sessionHolder) closeLog(s *sessionState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked(s)
}

// holding is the session this process holds by id, nil when none; the
// error is errAgentClosed once closed.
func (h *sessionHolder) holding(id string) (*sessionState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errAgentClosed
	}
	return h.sessions[id], nil
}

// drop closes s's log and forgets s, unless another state took its id.
func (h *sessionHolder) drop(s *sessionState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closeLocked(s)
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// whileOpen runs f under the lock unless closed, and reports whether it
// ran: what f sets, close sees.
func (h *sessionHolder) whileOpen(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	f()
	return true
}

// whileHeld runs f under the lock while s is the session held by its id
// (not closed or deleted meanwhile), and reports whether it ran.
func (h *sessionHolder) whileHeld(s *sessionState, f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.sessions[s.id] != s {
		return false
	}
	f()
	return true
}

// state returns the session's state, making an empty one (its log not yet
// opened) for a session this process has not seen.
func (h *sessionHolder) state(id string) (*sessionState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errAgentClosed
	}
	s, ok := h.sessions[id]
	if !ok {
		s = &sessionState{id: id}
		h.sessions[id] = s
	}
	return s, nil
}

// lookup returns the session this process holds by id; not found when it
// holds none (session/load or resume makes one, state).
func (h *sessionHolder) lookup(id string) (*sessionState, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[id]
	if !ok {
		return nil, acp.NewSessionNotFound(id)
	}
	return s, nil
}

// held fails unless s is still the session this process holds by its id:
// it may have been closed or deleted, or the agent shut down, meanwhile.
func (h *sessionHolder) held(s *sessionState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errAgentClosed
	}
	if h.sessions[s.id] != s {
		return acp.NewSessionNotFound(s.id)
	}
	return nil
}

// use marks s in use until release, so its log is not closed under it,
// and returns the log if it is open.
func (h *sessionHolder) use(s *sessionState) (*session.Log, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errAgentClosed
	}
	h.logs.use(s)
	return s.log, nil
}

// forget drops a session whose log was never opened (a session/load of a
// session that does not exist, or can't be read).
func (h *sessionHolder) forget(s *sessionState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// closeLocked closes s's log and forgets its events until the next acquire
// reads them again. Called under h.mu; h.logs calls it for a session not
// in use, once it has let go of it.
func (h *sessionHolder) closeLocked(s *sessionState) {
	h.logs.closed(s)
	if err := s.closeLog(); err != nil {
		h.log.Warn().Err(err).Str("session", s.id).Msg("closing a session log failed")
	}
}

// release ends a use that use began: what was appended is written and
// synced and the log's lock let go of, so another process may write the
// session; the log stays open for the next prompt until it has been idle
// for LogIdleTimeout.
func (h *sessionHolder) release(s *sessionState) {
	h.mu.Lock()
	l := s.log
	h.mu.Unlock()
	if l != nil && s.use.locked {
		// Outside h.mu: Unlock syncs the file.
		if err := l.Unlock(); err != nil {
			h.log.Warn().Err(err).Str("session", s.id).Msg("writing the session log before letting go of it failed")
		}
	}
	s.use.locked = false
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs.release(s)
}

// close closes every open session log, and stops every session's MCP
// servers; it holds no session after it.
func (h *sessionHolder) close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	var errs []error
	var stopping sync.WaitGroup
	defer stopping.Wait() // no server process outlives the agent
	for id, s := range h.sessions {
		stopping.Go(s.mcp.close)
		if s.log != nil {
			errs = append(errs, s.log.Close())
			s.log = nil
		}
		delete(h.sessions, id)
	}
	h.logs.reset()
	return errors.Join(errs...)
}

// open are the sessions this process holds.
func (h *sessionHolder) open() []*sessionState {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*sessionState, 0, len(h.sessions))
	for _, s := range h.sessions {
		out = append(out, s)
	}
	return out
}
