package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/rebound-agent/rebound/acp"
	"github.com/rebound-agent/rebound/recovery"
	"github.com/rebound-agent/rebound/session"
)

// After a crash some editors start a new session instead of going on with
// the one they show (codecompanion.nvim): the model no longer has the
// conversation, and nothing says so. So at a session's first prompt,
// Rebound looks for the session of the same directory that was used last
// and, when a stop of Rebound's cut its last turn, tells the person before
// the reply what was cut and how to get it back (README, after a crash).
//
// "Used last" is the latest turn/start: the notice's own session, once
// prompted, is newer than the one it names, so the next new session says
// nothing, and neither does a load that closes the cut turn later.

// interruptedTitle is the notice's title: short and with no colon, as
// codecompanion cuts a tool call's title (status.go) and shows nothing of
// its body, so the title itself says what to type there, the client that
// starts a new session after a crash (README); the body says the rest.
const interruptedTitle = "Your last session here was interrupted; /resume reopens it"

// Bounds of the search. clockSlack: a file's mtime, from the file
// system's coarse clock, may be a little before the time of the last event
// written to it.
const (
	maxInterruptedReads = 32
	clockSlack          = time.Second
)

// sessionLogs is what lastInterrupted reads of the logs; a test gives fakes.
type sessionLogs struct {
	modTime  func(id string) (time.Time, error)
	lastTurn func(id string) (session.LastTurn, error)
	held     func(id string) (bool, error)
}

// lastInterrupted chooses the session a first prompt's notice is about:
// of sums (the index's), those in cwd other than self, the one whose last
// turn started last, when that turn was cut by a stop of Rebound's (no
// turn/end, or one written after the crash) and nobody holds its log's
// lock (the turn is not running now). A log's mtime bounds the time of its
// last turn/start, so logs are read newest first, and only until the next
// cannot have started a turn later. errs are the logs that could not be
// read, which are passed over; ok is false when there is nothing to say.
func lastInterrupted(sums []session.Summary, self, cwd string, logs sessionLogs) (sum session.Summary, last session.LastTurn, ok bool, errs []error) {
	cands, errs := candidatesIn(sums, self, cwd, logs)
	best, last, readErrs := lastStarted(cands, logs)
	errs = append(errs, readErrs...)
	if best == nil || last.Ended && !last.Interrupted {
		return session.Summary{}, session.LastTurn{}, false, errs
	}
	held, err := logs.held(best.sum.SessionID)
	if err != nil {
		return session.Summary{}, session.LastTurn{}, false, append(errs, err)
	}
	if held {
		return session.Summary{}, session.LastTurn{}, false, errs
	}
	return best.sum, last, true, errs
}

// candidate is a session lastInterrupted may name, and its log's mtime.
type candidate struct {
	sum session.Summary
	mod time.Time
}

// candidatesIn is the sessions of sums in cwd other than self whose log
// is there, newest log first (ties by id).
func candidatesIn(sums []session.Summary, self, cwd string, logs sessionLogs) (cands []candidate, errs []error) {
	for _, s := range sums {
		if s.SessionID == self || cwd == "" || filepath.Clean(s.Cwd) != cwd {
			continue
		}
		mod, err := logs.modTime(s.SessionID)
		if err != nil {
			errs = unlessGone(errs, err)
			continue
		}
		cands = append(cands, candidate{s, mod})
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if c := b.mod.Compare(a.mod); c != 0 {
			return c
		}
		return strings.Compare(a.sum.SessionID, b.sum.SessionID)
	})
	return cands, errs
}

// lastStarted reads the last turns of cands, newest log first, and
// returns the candidate whose last turn started last (nil if none was
// prompted), and that turn. It stops at maxInterruptedReads logs, or at
// the first whose mtime says it can't hold a later turn/start, unless a
// turn read started after its log's mtime (then the events' clock is not
// the file system's, and mtimes bound nothing).
func lastStarted(cands []candidate, logs sessionLogs) (best *candidate, last session.LastTurn, errs []error) {
	prune := true
	for i, c := range cands {
		if best != nil && prune && c.mod.Add(clockSlack).Before(last.Started) {
			break // neither it nor any after it started a turn later
		}
		if i == maxInterruptedReads {
			break
		}
		lt, err := logs.lastTurn(c.sum.SessionID)
		if err != nil {
			errs = unlessGone(errs, err)
			continue
		}
		if lt.Turn == 0 {
			continue // never prompted: nothing to lose
		}
		if lt.Started.After(c.mod.Add(clockSlack)) {
			prune = false // the events' clock is not the file system's
		}
		if best == nil || lt.Started.After(last.Started) {
			best, last = &cands[i], lt
		}
	}
	return best, last, errs
}

// unlessGone is errs and err, unless err says the log is gone (deleted
// since the index was read: nothing to tell).
func unlessGone(errs []error, err error) []error {
	if errors.Is(err, session.ErrNotFound) {
		return errs
	}
	return append(errs, err)
}

// noteInterruptedIn runs at the start of every turn, after its turn/start:
// at a session's first, it shows the notice of the session in its
// directory that a stop of Rebound's cut (lastInterrupted), as other
// notices are shown, and records it as a status, which a load replays. It
// never fails or holds up the turn: what can't be read is a warning on
// stderr, and no notice. It reads the logs through logs (stateLogs).
func noteInterruptedIn(ctx context.Context, t *turn, logs sessionLogs) {
	a := t.agent
	if t.number != 1 || !filepath.IsAbs(t.s.dirs.cwd) {
		return
	}
	log := &a.cfg.Logger
	defer func() {
		if r := recover(); r != nil {
			log.Error().Str("session", t.s.id).Str("panic", fmt.Sprint(r)).Msg("looking for an interrupted session panicked")
		}
	}()
	cwd := filepath.Clean(t.s.dirs.cwd)
	sums, _, err := a.store.index.Page(nil, math.MaxInt, func(s session.Summary) bool {
		return s.SessionID != t.s.id && s.Cwd != "" && filepath.Clean(s.Cwd) == cwd
	})
	if err != nil {
		log.Warn().Err(err).Str("session", t.s.id).Msg("could not tell whether the last session here was interrupted")
		return
	}
	dir := a.cfg.StateDir
	sum, last, ok, errs := lastInterrupted(sums, t.s.id, cwd, logs)
	for _, err := range errs {
		log.Warn().Err(err).Str("session", t.s.id).Msg("could not tell whether a session here was interrupted")
	}
	if !ok {
		return
	}
	title := sum.Title
	if title == "" {
		// The index has no title when the session's first turn never
		// ended: its log has.
		if full, err := session.ReadSummary(session.Path(dir, sum.SessionID)); err == nil {
			title = full.Title
		}
	}
	body := interruptedWords(sum.SessionID, title, last.Last, time.Now())
	t.obs.showStatus(ctx, &waitStatus{}, interruptedTitle, body, acp.ToolStatusCompleted)
	if t.obs.statusNotices() {
		t.obs.notify(ctx, acp.Notice("info", interruptedTitle, body))
	}
	log.Info().Str("session", t.s.id).Str("interrupted", sum.SessionID).Msg("told the editor the last session here was interrupted")
}

// stateLogs reads the logs of the state directory dir.
func stateLogs(dir string) sessionLogs {
	return sessionLogs{
		modTime: func(id string) (time.Time, error) {
			fi, err := os.Lstat(session.Path(dir, id))
			if errors.Is(err, os.ErrNotExist) {
				return time.Time{}, fmt.Errorf("%w: %w", session.ErrNotFound, err)
			}
			if err != nil {
				return time.Time{}, err
			}
			return fi.ModTime(), nil
		},
		lastTurn: func(id string) (session.LastTurn, error) { return session.ReadLastTurn(session.Path(dir, id)) },
		held:     func(id string) (bool, error) { return session.Held(dir, id) },
	}
}

// interruptedWords is the notice's body: what was cut (title, id) and
// when (at, in the person's zone), and what to type to go on with it in
// the clients that start a new session after a crash (README): /resume is
// codecompanion's own command, not Rebound's (those are typed after a backslash there).
func interruptedWords(id, title string, at, now time.Time) string {
	what := "a session (" + id + ")"
	if title = printableTitle(title); title != "" {
		what = "“" + title + "” (" + id + ")"
	}
	when := "at " + recovery.ClockText(at, now)
	if at.IsZero() {
		when = "earlier"
	}
	return "Rebound stopped " + when + " in the middle of " + what + ", in this directory. " +
		"This chat is a new session: the model does not have that conversation. To go on with it, " +
		"open a new chat and, before sending anything, type /resume in codecompanion.nvim; " +
		"in an editor that lists past threads, open it there. In a terminal, `rebound sessions` lists it."
}

// printableTitle is a title from a log, which anyone may have written, on
// one line of printable characters and at most session.MaxTitleRunes long.
func printableTitle(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }), " ")
	if r := []rune(s); len(r) > session.MaxTitleRunes {
		s = string(r[:session.MaxTitleRunes-1]) + "…"
	}
	return s
}
