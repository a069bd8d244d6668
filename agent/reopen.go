package agent

import (
	"fmt"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// A client that respawns Rebound after a crash may go on with the session
// it shows, sending session/prompt (or set_mode, …) with no initialize and
// no session/load (agent-shell does). The acp server then serves it with
// no client capabilities and calls ReopenOnUse: from then on a session
// method naming a session this process does not hold opens it from its log
// first, as session/resume would, repairing a turn the dead process left
// open, and works in the directory the session was made in.

// sessionFinder is what reopener needs of the sessions (sessionStore).
type sessionFinder interface {
	// lookup is the session this process holds by id.
	lookup(id string) (*sessionState, error)
	// state is the session by id, held from now on; not found without a
	// log.
	state(id string) (*sessionState, error)
	// acquire opens (or reads again) s's log for a use, under s.turnMu;
	// done ends the use and lets go of turnMu.
	acquire(s *sessionState, write bool) error
	done(s *sessionState)
}

// reopener finds the session a session method names (Prompt, set_mode,
// set_config_option); once on (Agent.ReopenOnUse), one this process does
// not hold is opened from its log.
type reopener struct {
	store sessionFinder
	on    atomic.Bool
	log   *zerolog.Logger
}

// session is the session this process holds by id; after ReopenOnUse, one
// it does not hold is opened from its log. An id with no log is not found.
func (r *reopener) session(id string) (*sessionState, error) {
	s, err := r.store.lookup(id)
	if err == nil || !r.on.Load() {
		return s, err
	}
	if s, err = r.store.state(id); err != nil {
		return nil, err
	}
	s.turnMu.Lock()
	if err := r.store.acquire(s, false); err != nil {
		s.unlockTurn()
		return nil, err
	}
	cwd := s.dirs.cwd // set from the log's session/start (take) unless a load said otherwise
	r.store.done(s)
	if cwd == "" {
		return nil, fmt.Errorf("session %s: its log names no absolute working directory; open it from the editor's session list", id)
	}
	r.log.Info().Str("session", id).Str("cwd", cwd).Msg("session reopened for a client that skipped initialize")
	return s, nil
}
