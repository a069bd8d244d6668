package session_test

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/internal/testkit"
	"github.com/rebound-agent/rebound/session"
)

// writeSessionLog writes a log file for session s1 from lines and returns the
// state dir.
func writeSessionLog(t *testing.T, lines string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(dir+"/sessions", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session.Path(dir, "s1"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// oneCharChunks renders a log, as an older Rebound wrote it, whose open
// turn showed text in one record per character, and returns it with the
// seq of its last record.
func oneCharChunks(text string) (string, int64) {
	var b strings.Builder
	b.WriteString(render(rStart, rTurn1, rStep1))
	seq := int64(3)
	for _, r := range text {
		seq++
		d, _ := json.Marshal(session.AssistantChunk{Turn: 1, Step: 1, Text: string(r), Shown: true, MessageID: "m1"})
		b.WriteString(line(seq, session.TypeAssistantChunk, string(d)))
	}
	return b.String(), seq
}

// Open joins a run of chunk records into one event that says which lines
// it stands for; what is derived from the events is as before, and the log
// goes on after the last line.
func TestOpen_JoinsRunsOfChunks(t *testing.T) {
	text := strings.Repeat("héllo ", 500)
	lines, last := oneCharChunks(text)
	dir := writeSessionLog(t, lines)
	l, ld, err := session.Open(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := len(ld.Events); n != 4 {
		t.Fatalf("%d events, want 4: session/start, turn/start, step/start and one for the %d chunks", n, last-3)
	}
	ev := ld.Events[3]
	if ev.Seq != 4 || ev.Through != last {
		t.Errorf("joined event: seq %d through %d, want 4 through %d", ev.Seq, ev.Through, last)
	}
	var d session.AssistantChunk
	if err := json.Unmarshal(ev.Data, &d); err != nil || d != (session.AssistantChunk{Turn: 1, Step: 1, Text: text, Shown: true, MessageID: "m1"}) {
		t.Errorf("joined data = %+v, %v", d, err)
	}
	u, ok := session.UnfinishedReply(ld.Events)
	if !ok || u.Text != text || u.MessageID != "m1" {
		t.Errorf("UnfinishedReply = %+v, %v; want the shown text", u, ok)
	}
	// The log continues after the last line, and the joined events with
	// what is appended still make a valid conversation.
	app, err := l.Append(session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, MessageID: "m1", Text: text})
	if err != nil || app.Seq != last+1 {
		t.Fatalf("Append = seq %d, %v; want seq %d", app.Seq, err, last+1)
	}
	msgs, err := session.Conversation(append(ld.Events, app))
	if err != nil || len(msgs) != 2 || msgs[1].Text != text {
		t.Errorf("Conversation = %d messages, %v", len(msgs), err)
	}
	// Load still returns every line.
	l.Flush()
	if ld, err := session.Load(session.Path(dir, "s1")); err != nil || int64(len(ld.Events)) != last+1 {
		t.Errorf("Load = %d events, %v; want %d", len(ld.Events), err, last+1)
	}
}

// Only chunks of one step, message, kind and visibility are joined: what
// reads them in order sees the same text.
func TestOpen_JoinsOnlyAlikeChunks(t *testing.T) {
	chunk := func(step int, text, reasoning string, shown bool, msg string) rec {
		d, _ := json.Marshal(session.AssistantChunk{Turn: 1, Step: step, Text: text, Reasoning: reasoning, Shown: shown, MessageID: msg})
		return rec{session.TypeAssistantChunk, string(d)}
	}
	lines := render(rStart, rTurn1, rStep1,
		chunk(1, "a", "", true, "m1"), chunk(1, "b", "", true, "m1"), // joined
		chunk(1, "", "r", true, "m1"), chunk(1, "", "s", true, "m1"), // joined: reasoning
		chunk(1, "c", "", true, "m1"),
		chunk(1, "d", "", false, "m1"), // held mode
		chunk(1, "e", "", true, "m2"),
		chunk(1, "f", "x", false, ""), chunk(1, "g", "y", false, ""), // joined: both kinds
		rStepFail1,
		rec{session.TypeStepStart, `{"turn":1,"step":2}`},
		chunk(2, "h", "", true, "m2"),
	)
	dir := writeSessionLog(t, lines)
	l, ld, err := session.Open(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type got struct {
		Seq, Through int64
		Data         string
	}
	var chunks []got
	for _, ev := range ld.Events {
		if ev.Type == session.TypeAssistantChunk {
			chunks = append(chunks, got{ev.Seq, ev.Through, string(ev.Data)})
		}
	}
	want := []got{
		{4, 5, `{"turn":1,"step":1,"text":"ab","shown":true,"messageId":"m1"}`},
		{6, 7, `{"turn":1,"step":1,"reasoning":"rs","shown":true,"messageId":"m1"}`},
		{8, 0, `{"turn":1,"step":1,"text":"c","shown":true,"messageId":"m1"}`},
		{9, 0, `{"turn":1,"step":1,"text":"d","messageId":"m1"}`},
		{10, 0, `{"turn":1,"step":1,"text":"e","shown":true,"messageId":"m2"}`},
		{11, 12, `{"turn":1,"step":1,"text":"fg","reasoning":"xy"}`},
		{15, 0, `{"turn":1,"step":2,"text":"h","shown":true,"messageId":"m2"}`},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunk events (-want +got):\n%s", diff)
	}
	if _, err := session.Conversation(ld.Events); err != nil {
		t.Errorf("Conversation of the joined events: %v", err)
	}
}

// A log of one record per character costs its text in memory once opened,
// not an event per record (about 440 bytes each before).
func TestOpen_MemoryOfOneCharChunks(t *testing.T) {
	if testkit.Race {
		// Only a memory bound, like the allocation bounds: 6 s under -race
		// for a single goroutine's work. The run without -race checks it.
		t.Skip("a memory bound; checked by the run without -race")
	}
	const n = 100_000
	lines, _ := oneCharChunks(strings.Repeat("x", n))
	dir := writeSessionLog(t, lines)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l, ld, err := session.Open(dir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(ld)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d one-character records: %d bytes held after Open (%.1f per record)", n, held, float64(held)/n)
	if per := float64(held) / n; per > 16 {
		t.Errorf("Open holds %.1f bytes per one-character record, want at most 16", per)
	}
	if len(ld.Events) != 4 {
		t.Errorf("%d events, want 4", len(ld.Events))
	}
}
