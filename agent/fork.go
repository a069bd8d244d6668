package agent

import (
	"errors"
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/session"
)

// forker makes a fork of a session (session/fork).
type forker struct {
	dir stateDir
	// model is the default model now (Config.Model, or the one set up at
	// sign-in, signin.go); it and version are recorded in the fork's
	// session/start.
	model   func() string
	version string
	// resume opens the new session (sessionOpener.resume).
	resume func(acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error)
	// discard removes a fork that could not be opened: its log, its index
	// entry and what the store holds of it (sessionRemover.delete).
	discard func(id string) error
	log     *zerolog.Logger
}

// fork serves session/fork (unstable ACP, Agent.ForkSession): a new session whose log
// starts with a copy of the parent's events up to the parent's last
// finished turn, and whose session/start records where it came from
// (ForkedFrom). The parent's log is only read, without its lock, so a turn
// the parent runs meanwhile goes on (its unfinished turn is not copied) and
// nothing of the parent changes. The new session is then opened as
// session/resume opens one: a session/load of it replays the copy.
func (f forker) fork(req acp.ForkSessionRequest) (acp.ForkSessionResponse, error) {
	// Opened as session/load opens a log (no link, no other session's
	// log), refused in its words.
	parent, err := session.LoadSession(f.dir.path, req.SessionID)
	if err != nil {
		return acp.ForkSessionResponse{}, f.dir.openError(req.SessionID, err)
	}
	copied, turn := forkedEvents(parent.Events)
	id := newID("sess_")
	start := session.SessionStart{SessionID: id, Cwd: req.Cwd, Model: f.model(), AgentVersion: f.version,
		AdditionalDirectories: req.AdditionalDirectories, ForkedFrom: &session.ForkOrigin{SessionID: req.SessionID, Turn: turn}}
	if err := writeFork(f.dir.path, id, start, copied); err != nil {
		var we *session.WriteError
		if errors.As(err, &we) {
			return acp.ForkSessionResponse{}, f.dir.createError(err)
		}
		return acp.ForkSessionResponse{}, fmt.Errorf("fork session %s: %w", req.SessionID, err)
	}
	f.log.Info().Str("session", id).Str("parent", req.SessionID).Int("turn", turn).Msg("session forked")
	res, err := f.resume(acp.ResumeSessionRequest{SessionID: id, Cwd: req.Cwd,
		AdditionalDirectories: req.AdditionalDirectories, McpServers: req.McpServers})
	if err != nil {
		// The editor never learns of the fork: as a session/new that fails,
		// it leaves nothing (a session/list would show it otherwise).
		if derr := f.discard(id); derr != nil {
			f.log.Warn().Err(derr).Str("session", id).Msg("a fork that could not be opened is left behind")
		}
		return acp.ForkSessionResponse{}, err
	}
	return acp.ForkSessionResponse{SessionID: id, Modes: res.Modes, ConfigOptions: res.ConfigOptions}, nil
}

// forkedEvents are the events of a parent's log a fork copies, and the
// number of the parent's last finished turn (0 if none): every event after
// its session/start up to and including that turn's turn/end, then the
// mode and option changes made after it (the user's settings, which a
// running turn does not own). A turn still open, or cut by a crash and not
// yet closed, is left out whole.
func forkedEvents(events []session.Event) (copied []session.Event, turn int) {
	cut := 0 // index after the last turn/end
	for i, ev := range events {
		if ev.Type == session.TypeTurnEnd {
			cut = i + 1
		}
	}
	if cut > 0 {
		var d session.TurnEnd
		if session.Unmarshal(events[cut-1].Data, &d) == nil {
			turn = d.Turn
		}
		copied = append(copied, events[1:cut]...)
	}
	for _, ev := range events[max(cut, 1):] {
		if ev.Type == session.TypeMode || ev.Type == session.TypeConfig {
			copied = append(copied, ev)
		}
	}
	return copied, turn
}

// writeFork creates the fork's log: its own session/start, then the
// copies, each checked as any append is, synced before the session is
// answered. A failure leaves no log behind. The log's lock is let go of
// when it is closed.
func writeFork(stateDir, id string, start session.SessionStart, copied []session.Event) (err error) {
	log, err := session.Create(stateDir, id, start)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := log.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			os.Remove(log.Path())
		}
	}()
	for _, ev := range copied {
		if _, err := log.Append(ev.Type, ev.Data); err != nil {
			return fmt.Errorf("copy event %d: %w", ev.Seq, err)
		}
	}
	return log.Sync()
}
