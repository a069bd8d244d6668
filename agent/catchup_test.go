package agent

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/rs/zerolog"

	"github.com/rebound-agent/rebound/session"
)

// catchUp alone: reads made of events written here, with a fake fromLog
// that counts what it was given; no log file, no Agent.

func logEvent(t *testing.T, typ string, data any) session.Event {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return session.Event{Type: typ, Data: b}
}

// testCatchUp is a catchUp whose fromLog records how many events it saw
// each time, and gives the defaults.
func testCatchUp(seen *[]int) catchUp {
	nop := zerolog.Nop()
	return catchUp{fromLog: func(events []session.Event) options {
		*seen = append(*seen, len(events))
		return options{mode: ModeReadOnly}
	}, log: &nop}
}

// A whole read replaces what the session kept, sets where it works from
// its session/start only when nobody said, and takes the options and the
// recorded title; a tail adds to it, the last permission answer for a scope
// winning, and keeps a recorded title that the tail does not replace.
func TestCatchUp_WholeThenTail(t *testing.T) {
	var seen []int
	c := testCatchUp(&seen)
	start := logEvent(t, session.TypeSessionStart, session.SessionStart{SessionID: "sess_1", Cwd: "/made/here"})
	whole := []session.Event{
		start,
		logEvent(t, session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "first prompt"}),
		logEvent(t, session.TypePermission, session.Permission{Turn: 1, Scope: "run_command", Outcome: session.AllowAlways}),
		logEvent(t, session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn", Title: "Recorded"}),
	}

	s := &sessionState{id: "sess_1", conversation: conversation{events: []session.Event{start, start, start}, toolIDs: map[string]bool{"old": true}}}
	if !c.take(s, "p", &session.Loaded{Events: whole}) {
		t.Fatal("a whole read took nothing")
	}
	if len(s.events) != 4 || s.toolIDs != nil || s.rules["run_command"] != session.AllowAlways {
		t.Errorf("after a whole read: %d events, tool ids %v, rules %v", len(s.events), s.toolIDs, s.rules)
	}
	if s.dirs.cwd != "/made/here" || s.listing.home != "/made/here" || s.listing.title != "Recorded" || !s.listing.titled {
		t.Errorf("after a whole read: cwd %q, listing %+v", s.dirs.cwd, s.listing)
	}
	if s.current().mode != ModeReadOnly || len(seen) != 1 || seen[0] != 4 {
		t.Errorf("options: mode %q, fromLog saw %v; want read-only from all 4 events", s.current().mode, seen)
	}

	// Somebody said where to work: a whole read does not move it.
	said := &sessionState{id: "sess_1", dirs: sessionDirs{cwd: "/said"}}
	c.take(said, "p", &session.Loaded{Events: whole})
	if said.dirs.cwd != "/said" {
		t.Errorf("a whole read moved the cwd the editor gave to %q", said.dirs.cwd)
	}
	// A relative cwd in the log is no place to work.
	rel := &sessionState{id: "sess_1"}
	c.take(rel, "p", &session.Loaded{Events: []session.Event{logEvent(t, session.TypeSessionStart, session.SessionStart{SessionID: "sess_1", Cwd: "rel"})}})
	if rel.dirs.cwd != "" {
		t.Errorf("a relative cwd in the log became the cwd: %q", rel.dirs.cwd)
	}

	// Nothing appended: nothing taken.
	seen = nil
	if c.take(s, "p", &session.Loaded{Tail: true, Data: []any{}}) || len(s.events) != 4 || len(seen) != 0 {
		t.Errorf("an empty tail was taken: %d events, fromLog %v", len(s.events), seen)
	}

	s.toolCallIDs() // made from the log now: a tail extends them
	tail := []session.Event{
		logEvent(t, session.TypeTurnStart, session.TurnStart{Turn: 2, Text: "second"}),
		logEvent(t, session.TypePermission, session.Permission{Turn: 2, Scope: "run_command", Outcome: session.RejectAlways}),
		logEvent(t, session.TypePermission, session.Permission{Turn: 2, Scope: "write_file", Outcome: session.AllowAlways}),
		logEvent(t, session.TypeAssistantMessage, session.AssistantMessage{Turn: 2, Step: 1, MessageID: "m", ToolCalls: []session.MessageToolCall{{ID: "call_new", Name: "read_file", Arguments: "{}"}}}),
		logEvent(t, session.TypeTurnEnd, session.TurnEnd{Turn: 2, StopReason: "end_turn"}),
	}
	if !c.take(s, "p", &session.Loaded{Events: tail, Tail: true}) {
		t.Fatal("a tail took nothing")
	}
	want := map[string]string{"run_command": session.RejectAlways, "write_file": session.AllowAlways}
	if len(s.events) != 9 || !maps.Equal(s.rules, want) || !s.toolIDs["call_new"] {
		t.Errorf("after a tail: %d events, rules %v, tool ids %v", len(s.events), s.rules, s.toolIDs)
	}
	if s.listing.title != "Recorded" || !s.listing.titled || len(seen) != 1 || seen[0] != 9 {
		t.Errorf("after a tail without a title: title %q (titled %v), fromLog saw %v", s.listing.title, s.listing.titled, seen)
	}
	retitled := []session.Event{logEvent(t, session.TypeTurnStart, session.TurnStart{Turn: 3, Text: "third"}), logEvent(t, session.TypeTurnEnd, session.TurnEnd{Turn: 3, StopReason: "end_turn", Title: "Newer"})}
	c.take(s, "p", &session.Loaded{Events: retitled, Tail: true})
	if s.listing.title != "Newer" {
		t.Errorf("a tail's recorded title was not taken: %q", s.listing.title)
	}
}

// A log whose first turn never recorded a title is titled from its first
// prompt, by a whole read and by a tail alike.
func TestCatchUp_TitleFromTheFirstPrompt(t *testing.T) {
	var seen []int
	c := testCatchUp(&seen)
	s := &sessionState{id: "sess_1"}
	c.take(s, "p", &session.Loaded{Events: []session.Event{logEvent(t, session.TypeSessionStart, session.SessionStart{SessionID: "sess_1", Cwd: "/p"})}})
	c.take(s, "p", &session.Loaded{Tail: true, Events: []session.Event{logEvent(t, session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "fix the build"})}})
	if s.listing.title == "" || s.listing.titled {
		t.Errorf("title %q (titled %v); want one made from the first prompt, not recorded", s.listing.title, s.listing.titled)
	}
}

// What the read decoded (Loaded.Data) derives the history with nothing
// decoded again, and is dropped once taken; data that is not all of the
// events derives nothing, to be derived when needed.
func TestCatchUp_HistoryFromTheReadsData(t *testing.T) {
	dir := t.TempDir()
	l, err := session.Create(dir, "sess_1", session.SessionStart{SessionID: "sess_1", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendSync(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	ld, err := session.Load(session.Path(dir, "sess_1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ld.Data) != len(ld.Events) {
		t.Fatalf("the read decoded %d of %d events", len(ld.Data), len(ld.Events))
	}
	var seen []int
	c := testCatchUp(&seen)
	s := &sessionState{id: "sess_1"}
	c.take(s, "p", ld)
	if s.hist == nil || ld.Data != nil {
		t.Errorf("history derived %v, data kept %v; want derived, dropped", s.hist != nil, ld.Data != nil)
	}
	if h := derivedHistory(ld.Events, []any{nil}); h != nil {
		t.Error("data for some of the events derived a history")
	}
}
