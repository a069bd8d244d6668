package session_test

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// The shown journal: written with one write per call, read back in order,
// emptied after the commit, removed with the log; and what a crash left in
// it is the open turn's uncommitted text only.
func TestShownJournal_WriteReadClear(t *testing.T) {
	dir := t.TempDir()
	l, err := session.Create(dir, "s1", session.SessionStart{SessionID: "s1", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(session.TypeStepStart, session.StepStart{Turn: 1, Step: 1, MessageID: "m1"}); err != nil {
		t.Fatal(err)
	}
	writes := 0
	session.WrapWriter(l, func(w io.Writer) io.Writer { return countingWriter{w, &writes} })
	if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Reasoning: "think"},
		session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: "Hel"}); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: "lo"}); err != nil {
		t.Fatal(err)
	}
	// One write of the log's pending records, then one per WriteShown.
	if writes != 3 {
		t.Errorf("%d writes, want 3 (the pending log records, then one per call)", writes)
	}
	ld, err := session.Load(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ld.Events); n != 3 {
		t.Errorf("the log has %d events, want 3: what was pending was written first, and no chunk", n)
	}
	chunks, warnings, err := session.ReadShown(l.Path())
	if err != nil || len(warnings) > 0 {
		t.Fatalf("ReadShown: %v %v", err, warnings)
	}
	u, ok := session.UnfinishedShown(ld.Events, "s1", chunks)
	if !ok || u.Text != "Hello" || u.Reasoning != "think" || u.MessageID != "m1" || u.Step != 1 {
		t.Errorf("unfinished = %+v, %v; want Hello, think, m1, step 1", u, ok)
	}

	if err := l.ClearShown(); err != nil {
		t.Fatal(err)
	}
	if chunks, _, _ := session.ReadShown(l.Path()); len(chunks) != 0 {
		t.Errorf("after ClearShown the journal has %d chunks", len(chunks))
	}
	// Writing goes on at the start of the emptied file.
	if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m2", Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if chunks, _, _ := session.ReadShown(l.Path()); len(chunks) != 1 || chunks[0].Text != "again" {
		t.Errorf("after writing again: %+v", chunks)
	}
	l.Close()
	if err := session.Remove(dir, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(session.ShownPath(session.Path(dir, "s1"))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the journal outlived its log: %v", err)
	}
}

type countingWriter struct {
	w io.Writer
	n *int
}

func (c countingWriter) Write(p []byte) (int, error) { *c.n++; return c.w.Write(p) }

// A journal from before chunks named their session, under a turn whose
// step/start names no message (both written by that older Rebound).
func TestShownJournal_OnlyUncommittedTextOfTheOpenTurn(t *testing.T) {
	chunk := func(turn int, msg, text string) session.ShownChunk {
		return session.ShownChunk{AssistantChunk: session.AssistantChunk{Turn: turn, Step: 1, MessageID: msg, Text: text, Shown: true}}
	}
	log := func(recs ...rec) []session.Event {
		ld, err := session.Parse(strings.NewReader(render(recs...)), "fixture")
		if err != nil {
			t.Fatal(err)
		}
		return ld.Events
	}
	open := log(rStart, rTurn1, rStep1)
	committed := log(rStart, rTurn1, rStep1, rMessage1, rStepEnd1) // m1 is in the log
	closed := log(rStart, rTurn1, rStep1, rMessage1, rStepEnd1, rTurnEnd1)
	tests := []struct {
		name    string
		events  []session.Event
		journal []session.ShownChunk
		want    string
		ok      bool
	}{
		{"the open turn's reply", open, []session.ShownChunk{chunk(1, "m1", "Hel"), chunk(1, "m1", "lo")}, "Hello", true},
		{"a committed message's chunks are stale", committed, []session.ShownChunk{chunk(1, "m1", "Hello")}, "", false},
		{"after a commit, the next message's", committed, []session.ShownChunk{chunk(1, "m1", "Hello"), chunk(1, "m2", "Next")}, "Next", true},
		{"an earlier turn's chunks are stale", open, []session.ShownChunk{chunk(0, "m0", "old")}, "", false},
		{"no open turn", closed, []session.ShownChunk{chunk(1, "m9", "late")}, "", false},
		{"no journal", open, nil, "", false},
	}
	for _, tt := range tests {
		u, ok := session.UnfinishedShown(tt.events, "s1", tt.journal)
		if ok != tt.ok || u.Text != tt.want {
			t.Errorf("%s: %q, %v; want %q, %v", tt.name, u.Text, ok, tt.want, tt.ok)
		}
	}
}

// A journal a crash tore, or one that is not Rebound's, costs a warning
// per bad line, never the good ones.
func TestReadShown_TornAndBrokenLines(t *testing.T) {
	logPath := t.TempDir() + "/s1.jsonl"
	good := func(text string) string {
		b, _ := json.Marshal(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: text, Shown: true})
		return string(b) + "\n"
	}
	body := good("one") + "not json\n" + `{"turn":1,"step":1,"text":"unshown"}` + "\n" + good("two") +
		`{"turn":0,"step":1,"text":"no turn","shown":true}` + "\n" + strings.Repeat("x", 17<<20) + "\n" + good("three") + `{"turn":1,"st`
	if err := os.WriteFile(session.ShownPath(logPath), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	chunks, warnings, err := session.ReadShown(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, c := range chunks {
		texts = append(texts, c.Text)
	}
	if want := []string{"one", "two", "three"}; !slices.Equal(texts, want) {
		t.Errorf("chunks %q, want %q", texts, want)
	}
	if len(warnings) != 5 {
		t.Errorf("%d warnings, want 5 (not json, unshown, no turn, too long, torn):\n%s", len(warnings), strings.Join(warnings, "\n"))
	}
	if chunks, warnings, err := session.ReadShown(t.TempDir() + "/none.jsonl"); chunks != nil || warnings != nil || err != nil {
		t.Errorf("no journal: %v %v %v", chunks, warnings, err)
	}
}

// A journal whose reply was committed (emptied) goes when the lock does;
// one that still holds shown text stays for whoever closes the turn.
func TestShownJournal_RemovedOnlyWhenEmpty(t *testing.T) {
	for _, clear := range []bool{true, false} {
		dir := t.TempDir()
		l, err := session.Create(dir, "s1", session.SessionStart{SessionID: "s1", Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		if err := l.WriteShown(session.AssistantChunk{Turn: 1, Step: 1, MessageID: "m1", Text: "Hel"}); err != nil {
			t.Fatal(err)
		}
		if clear {
			if err := l.ClearShown(); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Unlock(); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(session.ShownPath(l.Path()))
		if gone := errors.Is(err, fs.ErrNotExist); gone != clear {
			t.Errorf("emptied %v: the journal is gone %v (%v), want %v", clear, gone, err, clear)
		}
		l.Close()
	}
}
