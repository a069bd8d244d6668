package agent

import (
	"maps"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/session"
)

// catchUp brings what a session keeps in memory up to date with what was
// read from its log (acquirer, after an open or a lock): the events and
// what is derived from them, the permission rules, options, tool call ids
// and title. It reads no file itself; it knows the configuration only
// through fromLog.
type catchUp struct {
	// fromLog are the options a log's events record (configMenu.fromLog).
	fromLog func([]session.Event) options
	log     *zerolog.Logger
}

// take brings s up to date with ld, read from the log at path (all of it,
// or what others appended: Loaded.Tail). It reports whether anything was
// read. Called under s.turnMu.
func (c catchUp) take(s *sessionState, path string, ld *session.Loaded) bool {
	for _, w := range ld.Warnings {
		c.log.Warn().Str("session", s.id).Str("path", path).Msg(w)
	}
	if ld.Tail && len(ld.Events) == 0 {
		return false
	}
	if ld.Tail {
		c.takeTail(s, ld)
	} else {
		c.takeWhole(s, ld)
	}
	ld.Data = nil
	return true
}

// takeWhole replaces what s keeps with what ld read: the whole log.
func (c catchUp) takeWhole(s *sessionState, ld *session.Loaded) {
	s.events, s.hist = ld.Events, derivedHistory(ld.Events, ld.Data)
	s.rules, s.toolIDs = session.PermissionRules(s.events), nil
	s.options.load(c.fromLog(s.events)) // the options its log records
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
func (c catchUp) takeTail(s *sessionState, ld *session.Loaded) {
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
	s.options.load(c.fromLog(s.events)) // the options its log records
	// The title is the last one recorded, else made from the first prompt.
	if sum, titled := session.Summarize(ld.Events); titled {
		s.listing.title, s.listing.titled = sum.Title, true
	} else if !s.listing.titled {
		// Rare: the session's first turn never recorded a title.
		sum, _ := session.Summarize(s.events)
		s.listing.title = sum.Title
	}
}
