package agent

import (
	"fmt"

	"github.com/rebound-agent/rebound/acp"
)

// A client that respawns Rebound after a crash may go on with the session
// it shows, sending session/prompt (or set_mode, …) with no initialize and
// no session/load (agent-shell does). The acp server then serves it with
// no client capabilities and calls ReopenOnUse: from then on a session
// method naming a session this process does not hold opens it from its log
// first, as session/resume would, repairing a turn the dead process left
// open, and works in the directory the session was made in.

// ReopenOnUse makes session methods open, from its log, a session this
// process does not hold (acp.SessionReopener).
func (a *Agent) ReopenOnUse() { a.reopenOnUse.Store(true) }

var _ acp.SessionReopener = (*Agent)(nil)

// session is the session this process holds by id; after ReopenOnUse, one
// it does not hold is opened from its log. An id with no log is not found.
func (a *Agent) session(id string) (*sessionState, error) {
	s, err := a.store.lookup(id)
	if err == nil || !a.reopenOnUse.Load() {
		return s, err
	}
	if s, err = a.store.state(id); err != nil {
		return nil, err
	}
	s.turnMu.Lock()
	if err := a.store.acquire(s, false); err != nil {
		s.unlockTurn()
		return nil, err
	}
	cwd := s.dirs.cwd // set from the log's session/start (take) unless a load said otherwise
	a.store.done(s)
	if cwd == "" {
		return nil, fmt.Errorf("session %s: its log names no absolute working directory; open it from the editor's session list", id)
	}
	a.cfg.Logger.Info().Str("session", id).Str("cwd", cwd).Msg("session reopened for a client that skipped initialize")
	return s, nil
}
