package session_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/session"
)

func TestShortTitle(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  \n\t\n", ""},
		{"Fix the build", "Fix the build"},
		{"\n\n  Explain   the\tretry policy  \nsecond line", "Explain the retry policy"},
		{strings.Repeat("x", 60), strings.Repeat("x", 60)},
		// Cut at the last space before the limit, with an ellipsis.
		{"Please fix the flaky retry test in recovery/executor_test.go; it times out on CI", "Please fix the flaky retry test in…"},
		// A word longer than the room is cut where it must be.
		{strings.Repeat("y", 80), strings.Repeat("y", 59) + "…"},
		// Punctuation before the cut goes.
		{"Rename these: alpha, beta, gamma, delta, epsilon, zeta, eta, theta, iota", "Rename these: alpha, beta, gamma, delta, epsilon, zeta, eta…"},
		{"Übersetze diesen Absatz ins Englische und prüfe die Grammatik sorgfältig bitte", "Übersetze diesen Absatz ins Englische und prüfe die…"},
	}
	for _, tt := range tests {
		got := session.ShortTitle(tt.in)
		if got != tt.want {
			t.Errorf("ShortTitle(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if n := len([]rune(got)); n > session.MaxTitleRunes {
			t.Errorf("ShortTitle(%q) has %d characters, more than %d", tt.in, n, session.MaxTitleRunes)
		}
	}
}

func TestSummarize(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2000, 1, 1, 0, 0, s, 0, time.UTC) }
	ev := func(s int, typ, data string) session.Event {
		return session.Event{Time: at(s), Type: typ, Data: []byte(data)}
	}
	start := ev(0, session.TypeSessionStart, `{"sessionId":"s1","cwd":"/w"}`)
	turn := ev(1, session.TypeTurnStart, `{"turn":1,"prompt":[],"text":"Explain the build\nin detail"}`)
	end := ev(2, session.TypeTurnEnd, `{"turn":1,"stopReason":"end_turn"}`)
	titled := ev(3, session.TypeTurnEnd, `{"turn":2,"stopReason":"end_turn","title":"Explain it"}`)
	tests := []struct {
		name   string
		events []session.Event
		want   session.Summary
		titled bool
	}{
		{"new", []session.Event{start}, session.Summary{SessionID: "s1", Cwd: "/w", UpdatedAt: at(0)}, false},
		{"first turn running", []session.Event{start, turn}, session.Summary{SessionID: "s1", Cwd: "/w", Title: "Explain the build", UpdatedAt: at(1)}, false},
		{"titled", []session.Event{start, turn, end, titled}, session.Summary{SessionID: "s1", Cwd: "/w", Title: "Explain it", UpdatedAt: at(3)}, true},
	}
	for _, tt := range tests {
		got, titled := session.Summarize(tt.events)
		if diff := cmp.Diff(tt.want, got); diff != "" || titled != tt.titled {
			t.Errorf("%s: Summarize titled %v, want %v (-want +got):\n%s", tt.name, titled, tt.titled, diff)
		}
	}
}

// A log that Load refuses still has a summary, from the lines that read.
func TestReadSummary_BrokenLog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s1.jsonl")
	log := render(rStart, rTurn1) + "{not json}\n" + line(4, session.TypeTurnEnd, `{"turn":1,"title":"Hello there"}`) + `{"seq":5,"v":1,"ti`
	if err := os.WriteFile(path, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := session.ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Summary{SessionID: "s1", Cwd: "/w", Title: "Hello there", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadSummary (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "\n", render(rTurn1), "garbage\n" + render(rStart)} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := session.ReadSummary(path); err == nil {
			t.Errorf("ReadSummary(%q) succeeded, want an error: not a session log", bad)
		}
	}
}

// writeLog writes a session log with one session/start at time sec.
func writeLog(t *testing.T, stateDir, id, cwd string, sec int, more ...string) {
	t.Helper()
	dir := filepath.Join(stateDir, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	log := fmt.Sprintf(`{"seq":1,"v":1,"time":"2000-01-01T00:00:%02dZ","type":"session/start","data":{"sessionId":%q,"cwd":%q}}`+"\n", sec, id, cwd)
	for _, l := range more {
		log += l
	}
	if err := os.WriteFile(session.Path(stateDir, id), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
}

func ids(sums []session.Summary) []string {
	var out []string
	for _, s := range sums {
		out = append(out, s.SessionID)
	}
	return out
}

func mustList(t *testing.T, x *session.Index) []session.Summary {
	t.Helper()
	sums, err := x.List()
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestIndex_ListRebuildsFromLogs(t *testing.T) {
	state := t.TempDir()
	if got := mustList(t, session.NewIndex(state, nil)); len(got) != 0 {
		t.Fatalf("List of an empty state dir = %v, want none", got)
	}
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/v", 3)
	writeLog(t, state, "c", "/w", 2, line(2, session.TypeTurnEnd, `{"turn":1,"title":"Cee"}`))
	// Not logs: listed never.
	os.WriteFile(filepath.Join(state, "sessions", "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(state, "sessions", "bad.name.jsonl"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(state, "sessions", "empty.jsonl"), nil, 0o600)

	var warnings []error
	got := mustList(t, session.NewIndex(state, func(err error) { warnings = append(warnings, err) }))
	if diff := cmp.Diff([]string{"b", "c", "a"}, ids(got)); diff != "" {
		t.Errorf("newest first (-want +got):\n%s", diff)
	}
	if got[1].Title != "Cee" || got[1].Cwd != "/w" {
		t.Errorf("c = %+v, want title Cee in /w", got[1])
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if _, err := os.Stat(session.IndexPath(state)); err != nil {
		t.Fatalf("List did not write the index: %v", err)
	}

	// A new Index (another process) reads the index, not the logs: a log
	// changed behind the index's back keeps its entry.
	writeLog(t, state, "a", "/w", 9)
	if got := mustList(t, session.NewIndex(state, nil)); got[2].SessionID != "a" || !got[2].UpdatedAt.Equal(time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)) {
		t.Errorf("a = %+v, want the indexed updatedAt 00:00:01", got[2])
	}

	// An index that is garbage is rebuilt from the logs, with a warning for
	// none of it: unreadable lines are skipped.
	if err := os.WriteFile(session.IndexPath(state), []byte("{garbage\n\x00\x01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids(mustList(t, session.NewIndex(state, nil)))); diff != "" {
		t.Errorf("after rebuilding (-want +got):\n%s", diff)
	}
}

func TestIndex_PutRemoveAndVanishedLogs(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/w", 2)
	x := session.NewIndex(state, nil)
	mustList(t, x)
	if err := x.Put(session.Summary{SessionID: "a", Cwd: "/w", Title: "Now", UpdatedAt: time.Date(2000, 1, 1, 0, 1, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	got := mustList(t, x)
	if diff := cmp.Diff([]string{"a", "b"}, ids(got)); diff != "" || got[0].Title != "Now" {
		t.Errorf("after Put: %+v (-want +got):\n%s", got, diff)
	}
	// An older summary (read from a log before its writer put a newer one)
	// does not replace a newer one.
	if err := x.Put(session.Summary{SessionID: "a", Cwd: "/w", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	if got := mustList(t, session.NewIndex(state, nil)); got[0].Title != "Now" {
		t.Errorf("an older summary replaced a newer one: %+v", got[0])
	}

	// Deleted: a tombstone, and the log gone.
	os.Remove(session.Path(state, "b"))
	if err := x.Remove("b"); err != nil {
		t.Fatal(err)
	}
	// Gone without a tombstone (removed by hand): not listed either.
	os.Remove(session.Path(state, "a"))
	for _, ix := range []*session.Index{x, session.NewIndex(state, nil)} {
		if got := mustList(t, ix); len(got) != 0 {
			t.Errorf("List = %v, want none", ids(got))
		}
	}
}

// Two Index values on one state dir are two processes: each sees what the
// other appends, reading only the new lines.
func TestIndex_SeesOtherWriters(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	x1, x2 := session.NewIndex(state, nil), session.NewIndex(state, nil)
	mustList(t, x1)
	mustList(t, x2)
	writeLog(t, state, "b", "/w", 2)
	if err := x2.Put(session.Summary{SessionID: "b", Cwd: "/w", Title: "From x2", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 2, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	got := mustList(t, x1)
	if diff := cmp.Diff([]string{"b", "a"}, ids(got)); diff != "" || got[0].Title != "From x2" {
		t.Errorf("x1 after x2's Put: %+v (-want +got):\n%s", got, diff)
	}
}

// A line torn by a crash is skipped, and the next append starts a line of
// its own.
func TestIndex_TornLine(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/w", 2)
	x := session.NewIndex(state, nil)
	mustList(t, x)
	f, err := os.OpenFile(session.IndexPath(state), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"sessionId":"a","cwd":"/w","ti`)
	f.Close()
	if err := x.Put(session.Summary{SessionID: "b", Cwd: "/w", Title: "After the tear", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 5, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	for _, ix := range []*session.Index{x, session.NewIndex(state, nil)} {
		got := mustList(t, ix)
		if diff := cmp.Diff([]string{"b", "a"}, ids(got)); diff != "" || got[0].Title != "After the tear" {
			t.Errorf("List: %+v (-want +got):\n%s", got, diff)
		}
	}
}

// An index mostly made of outdated lines is rewritten with one line per
// session; readers holding the old file read the new one.
func TestIndex_Compacts(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/w", 2)
	x, other := session.NewIndex(state, nil), session.NewIndex(state, nil)
	mustList(t, x)
	mustList(t, other)
	for i := range 1100 {
		if err := x.Put(session.Summary{SessionID: "a", Cwd: "/w", Title: fmt.Sprint("title ", i), UpdatedAt: time.Date(2000, 1, 1, 1, 0, i, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := os.ReadFile(session.IndexPath(state))
	mustList(t, x)
	after, _ := os.ReadFile(session.IndexPath(state))
	if n := strings.Count(string(after), "\n"); n != 2 || strings.Count(string(before), "\n") < 1100 {
		t.Errorf("index has %d lines after compaction (%d before), want 2", n, strings.Count(string(before), "\n"))
	}
	got := mustList(t, other)
	if diff := cmp.Diff([]string{"a", "b"}, ids(got)); diff != "" || got[0].Title != "title 1099" {
		t.Errorf("the other reader after compaction: %+v (-want +got):\n%s", got[0], diff)
	}
}

func TestRemove(t *testing.T) {
	state, l := create(t)
	if err := session.Remove(state, "s1"); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Remove of an open log = %v, want ErrLocked", err)
	}
	l.Close()
	if err := session.Remove(state, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(session.Path(state, "s1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the log is still there: %v", err)
	}
	if err := session.Remove(state, "s1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Remove of a removed log = %v, want ErrNotFound", err)
	}
	if err := session.Remove(state, "../x"); err == nil {
		t.Error("Remove of a bad id succeeded")
	}
}

// allocated returns the bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An index with a huge tail without a newline (a runaway writer, a full
// disk, a hostile process) costs a List neither memory in proportion to it
// nor a second read: the tail is skipped unread and the file rewritten.
func TestIndex_HugeUnterminatedTail(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/w", 2)
	mustList(t, session.NewIndex(state, nil))
	const junk = 16 << 20
	f, err := os.OpenFile(session.IndexPath(state), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append([]byte(`{"sessionId":"a","cwd":"`), strings.Repeat("x", junk)...)); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var got []session.Summary
	if n := allocated(func() { got = mustList(t, session.NewIndex(state, nil)) }); n > 1<<20 {
		t.Errorf("List of an index with a %d MiB tail allocated %d KiB, want under 1 MiB", junk>>20, n>>10)
	}
	if diff := cmp.Diff([]string{"b", "a"}, ids(got)); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	repaired, err := os.ReadFile(session.IndexPath(state))
	if err != nil {
		t.Fatal(err)
	}
	if len(repaired) > 4<<10 || strings.Count(string(repaired), "\n") != 2 || !strings.HasSuffix(string(repaired), "\n") {
		t.Errorf("index after List has %d bytes, want its 2 lines only:\n%.300s", len(repaired), repaired)
	}
	fi, _ := os.Stat(session.IndexPath(state))
	if diff := cmp.Diff([]string{"b", "a"}, ids(mustList(t, session.NewIndex(state, nil)))); diff != "" {
		t.Errorf("List after the repair (-want +got):\n%s", diff)
	}
	if fi2, _ := os.Stat(session.IndexPath(state)); !os.SameFile(fi, fi2) {
		t.Error("the next List rewrote the repaired index again")
	}
}

// A line too long to be a summary is skipped unread, and the lines after
// it are read.
func TestIndex_HugeLineInTheMiddle(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "b", "/w", 2)
	index := `{"sessionId":"a","cwd":"/w","title":"Before","updatedAt":"2000-01-01T00:00:01Z"}` + "\n" +
		`{"sessionId":"b","cwd":"` + strings.Repeat("y", 4<<20) + `","updatedAt":"2000-01-01T00:00:02Z"}` + "\n" +
		`{"sessionId":"b","cwd":"/w","title":"After","updatedAt":"2000-01-01T00:00:02Z"}` + "\n"
	if err := os.WriteFile(session.IndexPath(state), []byte(index), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []session.Summary
	if n := allocated(func() { got = mustList(t, session.NewIndex(state, nil)) }); n > 1<<20 {
		t.Errorf("List allocated %d KiB, want under 1 MiB", n>>10)
	}
	want := []session.Summary{
		{SessionID: "b", Cwd: "/w", Title: "After", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 2, 0, time.UTC)},
		{SessionID: "a", Cwd: "/w", Title: "Before", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if fi, _ := os.Stat(session.IndexPath(state)); fi.Size() > 4<<10 {
		t.Errorf("index has %d bytes after List, want the long line gone", fi.Size())
	}
}

// A crash mid-append leaves a short torn line; the List that finds it
// rewrites the file, so later readers do not skip it again.
func TestIndex_TornTailRepaired(t *testing.T) {
	state := t.TempDir()
	writeLog(t, state, "a", "/w", 1)
	mustList(t, session.NewIndex(state, nil))
	f, err := os.OpenFile(session.IndexPath(state), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"sessionId":"a","cwd":"/w","ti`)
	f.Close()
	if diff := cmp.Diff([]string{"a"}, ids(mustList(t, session.NewIndex(state, nil)))); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(session.IndexPath(state))
	if strings.Count(string(b), "\n") != 1 || !strings.HasSuffix(string(b), "}\n") {
		t.Errorf("index after List = %q, want one whole line", b)
	}
}

// A summary too long for a line of the index (a cwd of many KiB) is not
// written, or every List would read it and append it again; it is listed
// from its log.
func TestIndex_SummaryTooLongForALine(t *testing.T) {
	state := t.TempDir()
	// 12 KB in the log (writeLog does not escape '<'), 72 KB in an index
	// line (json.Marshal does).
	cwd := "/" + strings.Repeat("<", 12<<10)
	writeLog(t, state, "a", "/w", 1)
	writeLog(t, state, "long", cwd, 2)
	x := session.NewIndex(state, nil)
	mustList(t, x)
	if err := x.Put(session.Summary{SessionID: "long", Cwd: cwd, UpdatedAt: time.Date(2000, 1, 1, 0, 0, 2, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		got := mustList(t, session.NewIndex(state, nil))
		if diff := cmp.Diff([]string{"long", "a"}, ids(got)); diff != "" || got[0].Cwd != cwd {
			t.Errorf("List (-want +got):\n%s", diff)
		}
		if fi, _ := os.Stat(session.IndexPath(state)); fi.Size() > 4<<10 {
			t.Fatalf("index has %d bytes, want the long summary left out", fi.Size())
		}
	}
}

// settle dates the sessions directory's last change an hour back, as for
// a state directory nobody changed lately: a page then trusts what the
// last read of the directory found, until the directory changes.
func settle(t *testing.T, state string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(state, "sessions"), old, old); err != nil {
		t.Fatal(err)
	}
}

// pageAll pages through x, n at a time, and returns every page's ids.
func pageAll(t *testing.T, x *session.Index, n int, keep func(session.Summary) bool) [][]string {
	t.Helper()
	var pages [][]string
	var after *session.Summary
	for range 100 {
		page, more, err := x.Page(after, n, keep)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, ids(page))
		if !more {
			return pages
		}
		after = &session.Summary{SessionID: page[len(page)-1].SessionID, UpdatedAt: page[len(page)-1].UpdatedAt}
	}
	t.Fatal("more than 100 pages")
	return nil
}

// Pages are List cut where keep says, in order, ties by id; a page ends
// with more only when an accepted session follows.
func TestIndex_Page(t *testing.T) {
	state := t.TempDir()
	for i, id := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		writeLog(t, state, id, []string{"/w", "/v"}[i%2], []int{1, 2, 2, 2, 3, 4, 5}[i])
	}
	settle(t, state)
	x := session.NewIndex(state, nil)
	all := func(session.Summary) bool { return true }
	want := [][]string{{"g", "f"}, {"e", "b"}, {"c", "d"}, {"a"}}
	if diff := cmp.Diff(want, pageAll(t, x, 2, all)); diff != "" {
		t.Errorf("pages of two (-want +got):\n%s", diff)
	}
	inW := func(s session.Summary) bool { return s.Cwd == "/w" }
	if diff := cmp.Diff([][]string{{"g", "e", "c"}, {"a"}}, pageAll(t, x, 3, inW)); diff != "" {
		t.Errorf("pages of three in /w (-want +got):\n%s", diff)
	}
	// The last accepted session fills the page exactly: no empty page
	// follows.
	if diff := cmp.Diff([][]string{{"g", "e", "c", "a"}}, pageAll(t, x, 4, inW)); diff != "" {
		t.Errorf("one full page (-want +got):\n%s", diff)
	}
	// A new Index (another process) asked for a later page first reads as
	// List does.
	after := &session.Summary{SessionID: "b", UpdatedAt: time.Date(2000, 1, 1, 0, 0, 2, 0, time.UTC)}
	page, more, err := session.NewIndex(state, nil).Page(after, 10, all)
	if err != nil || more {
		t.Fatalf("Page after b: more %v, %v", more, err)
	}
	if diff := cmp.Diff([]string{"c", "d", "a"}, ids(page)); diff != "" {
		t.Errorf("after b, from a new Index (-want +got):\n%s", diff)
	}
}

// A cursor names a place, not a session: the pages after it neither skip
// nor repeat when sessions are made, deleted or changed meanwhile, and a
// log removed by hand is left out of a later page without the directory
// being read again.
func TestIndex_PageWhileSessionsChange(t *testing.T) {
	state := t.TempDir()
	at := func(s int) time.Time { return time.Date(2000, 1, 1, 0, 0, s, 0, time.UTC) }
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		writeLog(t, state, id, "/w", i+1)
	}
	mustList(t, session.NewIndex(state, nil)) // the index file is there
	settle(t, state)
	x := session.NewIndex(state, nil)
	all := func(session.Summary) bool { return true }
	p1, more, err := x.Page(nil, 2, all)
	if err != nil || !more {
		t.Fatalf("page 1: more %v, %v", more, err)
	}
	if diff := cmp.Diff([]string{"e", "d"}, ids(p1)); diff != "" {
		t.Fatalf("page 1 (-want +got):\n%s", diff)
	}
	cursor := &session.Summary{SessionID: "d", UpdatedAt: at(4)}

	// Meanwhile: a new session, one of page 1 deleted (the cursor's own),
	// c active again, b's log removed by hand.
	writeLog(t, state, "f", "/w", 9)
	if err := x.Put(session.Summary{SessionID: "f", Cwd: "/w", UpdatedAt: at(9)}); err != nil {
		t.Fatal(err)
	}
	os.Remove(session.Path(state, "d"))
	if err := x.Remove("d"); err != nil {
		t.Fatal(err)
	}
	if err := x.Put(session.Summary{SessionID: "c", Cwd: "/w", Title: "Again", UpdatedAt: at(10)}); err != nil {
		t.Fatal(err)
	}
	os.Remove(session.Path(state, "b"))
	// A log older than the cursor that the index never heard of is found
	// by the next first page, not by this paging.
	writeLog(t, state, "aa", "/w", 1)

	p2, more, err := x.Page(cursor, 2, all)
	if err != nil || more {
		t.Fatalf("page 2: more %v, %v", more, err)
	}
	if diff := cmp.Diff([]string{"a"}, ids(p2)); diff != "" {
		t.Errorf("page 2 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c", "f", "e", "a", "aa"}, ids(mustList(t, x))); diff != "" {
		t.Errorf("List afterwards (-want +got):\n%s", diff)
	}
}

// Property: a title made from any prompt is printable text on one line:
// no control or format character (a pasted terminal line's colour codes,
// a bidi override), and a terminal's escape sequences go whole, not their
// ESC alone (a colour code's "[31m" is no part of a title). The title is
// sent to the editor (session_info_update, session/list) and shown by
// `rebound sessions`; a first line pasted from a terminal titled the
// session "\x1b[31mhello" (found driving the binary).
func TestShortTitle_Printable(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 2))
	pieces := []string{"\x1b[31m", "\x1b[0m", "\x1b[1;32m", "\x1b]0;t\x07", "\x1b]8;;http://x\x1b\\", "\x1bc", "\x9b2J", "\x00", "\x07", "\u202e", "\u200b", "\ufeff", "\x7f", "\r", "\t", " ", "\n", "error", "é", "日本", "\xff"}
	for range 3000 {
		var b strings.Builder
		for range r.IntN(20) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		in := b.String()
		got := session.ShortTitle(in)
		if i := strings.IndexFunc(got, func(c rune) bool {
			return unicode.IsControl(c) || unicode.Is(unicode.Cf, c) || unicode.IsSpace(c) && c != ' '
		}); i >= 0 {
			t.Fatalf("ShortTitle(%q) = %q: not printable at %d", in, got, i)
		}
		if strings.Contains(got, "[31m") || strings.Contains(got, "]0;") || strings.Contains(got, "[1;32m") {
			t.Fatalf("ShortTitle(%q) = %q: an escape sequence's remains", in, got)
		}
		if n := utf8.RuneCountInString(got); n > session.MaxTitleRunes {
			t.Fatalf("ShortTitle(%q) has %d characters", in, n)
		}
	}
	if got := session.ShortTitle("\x1b[31merror\x1b[0m: undefined: foo"); got != "error: undefined: foo" {
		t.Errorf("a pasted compiler line is titled %q", got)
	}
}
