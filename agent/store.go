package agent

import (
	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/session"
)

// sessionStore is the sessions this process holds and their uses, in
// parts, each with only what it needs: which sessions are held and their
// open logs (sessionHolder, holder.go, bounded by logCache), a use of
// one from acquire to done (acquirer, acquire.go, which catches up with
// the log through catchUp, catchup.go), and the session index. It knows
// the configuration only through what it is given.
type sessionStore struct {
	*sessionHolder
	*acquirer
	// index lists the sessions of the state directory (session/list).
	index *session.Index
	dir   stateDir
	log   *zerolog.Logger
}

func newSessionStore(cfg *Config, dir stateDir, menu *configMenu) *sessionStore {
	st := &sessionStore{dir: dir, log: &cfg.Logger}
	st.sessionHolder = newSessionHolder(cfg.MaxOpenLogs, cfg.LogIdleTimeout, st.log)
	st.acquirer = &acquirer{holder: st.sessionHolder, dir: dir, catchUp: catchUp{fromLog: menu.fromLog, log: st.log}, indexed: st.putSummary, log: st.log}
	st.index = session.NewIndex(cfg.StateDir, func(err error) {
		st.log.Warn().Err(err).Msg("session index")
	})
	return st
}

// putSummary writes a session's summary to the index. The index is a
// cache of the logs: a failure is logged, never the request's.
func (st *sessionStore) putSummary(sum session.Summary) {
	if err := st.index.Put(sum); err != nil {
		st.log.Warn().Err(err).Str("session", sum.SessionID).Msg("session index")
	}
}
