package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rebound-agent/rebound/session"
)

var start1 = session.SessionStart{SessionID: "s1", Cwd: "/w", Model: "m"}

// create makes a log in a fresh state dir; the log is closed when the test
// ends.
func create(t *testing.T) (stateDir string, l *session.Log) {
	t.Helper()
	stateDir = t.TempDir()
	l, err := session.Create(stateDir, "s1", start1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return stateDir, l
}

// mustAppend appends each (type, data) pair and returns the events.
func mustAppend(t *testing.T, l *session.Log, recs ...any) []session.Event {
	t.Helper()
	var evs []session.Event
	for i := 0; i < len(recs); i += 2 {
		ev, err := l.Append(recs[i].(string), recs[i+1])
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// turn1 is a whole successful turn as the agent writes it.
var turn1 = []any{
	session.TypeTurnStart, session.TurnStart{Turn: 1, Prompt: json.RawMessage(`[{"type":"text","text":"hi"}]`), Text: "hi"},
	session.TypeStepStart, session.StepStart{Turn: 1, Step: 1, Model: "m"},
	session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "Hel"},
	session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "lo"},
	session.TypeAssistantMessage, session.AssistantMessage{Turn: 1, Step: 1, MessageID: "msg_1", Text: "Hello", FinishReason: "stop"},
	session.TypeStepEnd, session.StepEnd{Turn: 1, Step: 1, Outcome: session.OutcomeOK},
	session.TypeTurnEnd, session.TurnEnd{Turn: 1, StopReason: "end_turn"},
}

func TestLog_RoundTrip(t *testing.T) {
	stateDir, l := create(t)
	appended := mustAppend(t, l, turn1...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ld, err := session.Load(session.Path(stateDir, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	if ld.Events[0].Seq != 1 || ld.Events[0].Type != session.TypeSessionStart {
		t.Errorf("first event = %+v, want session/start with seq 1", ld.Events[0])
	}
	var start session.SessionStart
	if err := json.Unmarshal(ld.Events[0].Data, &start); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(start1, start); diff != "" {
		t.Errorf("session/start (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(appended, ld.Events[1:]); diff != "" {
		t.Errorf("loaded events (-want +got):\n%s", diff)
	}
	for i, ev := range ld.Events {
		if ev.Seq != int64(i+1) || ev.V != session.SchemaVersion || ev.Time.IsZero() {
			t.Errorf("event %d = seq %d, v %d, time %v", i, ev.Seq, ev.V, ev.Time)
		}
	}
	if len(ld.Warnings) != 0 {
		t.Errorf("warnings: %q", ld.Warnings)
	}
}

func TestCreate_FileModes(t *testing.T) {
	stateDir, l := create(t)
	for _, tt := range []struct {
		path string
		want fs.FileMode
	}{
		{filepath.Join(stateDir, "sessions"), fs.ModeDir | 0o700},
		{l.Path(), 0o600},
	} {
		fi, err := os.Stat(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != tt.want {
			t.Errorf("mode of %s = %v, want %v", tt.path, fi.Mode(), tt.want)
		}
	}
	if got, want := l.Path(), filepath.Join(stateDir, "sessions", "s1.jsonl"); got != want {
		t.Errorf("Path() = %q, want %q", got, want)
	}
	if got := l.SessionID(); got != "s1" {
		t.Errorf("SessionID() = %q, want s1", got)
	}
}

func TestCreate_Exists(t *testing.T) {
	stateDir, _ := create(t)
	_, err := session.Create(stateDir, "s1", start1)
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("second Create: err = %v, want fs.ErrExist", err)
	}
}

func TestPath(t *testing.T) {
	if got, want := session.Path("/state", "abc"), filepath.FromSlash("/state/sessions/abc.jsonl"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
}

func TestCheckSessionID_RejectsUnsafeNames(t *testing.T) {
	for _, id := range []string{"../x", "", "a/b", `a\b`, "..", ".", "x.jsonl", "a b", "é", strings.Repeat("a", 129)} {
		t.Run(id, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			if err := session.CheckSessionID(id); err == nil {
				t.Errorf("CheckSessionID(%q) = nil, want an error", id)
			}
			if _, err := session.Create(stateDir, id, start1); err == nil || !strings.Contains(err.Error(), "invalid session id") {
				t.Errorf("Create(%q): err = %v, want invalid session id", id, err)
			}
			if _, _, err := session.Open(stateDir, id); err == nil || !strings.Contains(err.Error(), "invalid session id") {
				t.Errorf("Open(%q): err = %v, want invalid session id", id, err)
			}
			if _, err := os.Stat(filepath.Dir(stateDir)); err != nil {
				t.Fatal(err)
			}
			if entries, _ := os.ReadDir(filepath.Dir(stateDir)); len(entries) != 0 {
				t.Errorf("Create(%q) left files: %v", id, entries)
			}
		})
	}
}

func TestCheckSessionID_AcceptsSafeNames(t *testing.T) {
	for _, id := range []string{"a", "sess_0123abcdef", "A-b_C-9", strings.Repeat("a", 128)} {
		if err := session.CheckSessionID(id); err != nil {
			t.Errorf("CheckSessionID(%q) = %v", id, err)
		}
	}
}

func TestOpen_ContinuesSeq(t *testing.T) {
	stateDir, l := create(t)
	mustAppend(t, l, turn1[:4]...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2, ld, err := session.Open(stateDir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if len(ld.Events) != 3 || ld.OpenTurn != 1 || ld.OpenStep != 1 {
		t.Errorf("loaded %d events, open turn %d step %d; want 3, 1, 1", len(ld.Events), ld.OpenTurn, ld.OpenStep)
	}
	evs := mustAppend(t, l2, turn1[4:]...)
	if evs[0].Seq != 4 || evs[len(evs)-1].Seq != 8 {
		t.Errorf("appended seq %d..%d, want 4..8", evs[0].Seq, evs[len(evs)-1].Seq)
	}
}

func TestOpen_NotFound(t *testing.T) {
	_, _, err := session.Open(t.TempDir(), "nope")
	if !errors.Is(err, session.ErrNotFound) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want ErrNotFound and fs.ErrNotExist", err)
	}
	if _, err := session.Load(filepath.Join(t.TempDir(), "nope.jsonl")); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Load: err = %v, want ErrNotFound", err)
	}
}

func TestOpen_RefusesBrokenLog(t *testing.T) {
	stateDir := t.TempDir()
	path := session.Path(stateDir, "s1")
	writeFile(t, path, render(rStart, rTurn1)+"{oops}\n"+line(3, session.TypeTurnEnd, rTurnEnd1.data))
	_, _, err := session.Open(stateDir, "s1")
	ie, ok := errors.AsType[*session.InvariantError](err)
	if !ok || ie.Line != 3 || ie.Path != path {
		t.Errorf("err = %v, want an *InvariantError for %s line 3", err, path)
	}
}

func TestOpen_RepairsTornTail(t *testing.T) {
	stateDir, l := create(t)
	mustAppend(t, l, turn1[:2]...)
	l.Close()
	path := session.Path(stateDir, "s1")
	good := readFile(t, path)
	torn := `{"seq":3,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/st`
	writeFile(t, path, good+torn)

	l2, ld, err := session.Open(stateDir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	wantWarnings := []string{
		path + ":3: dropped a torn last line (60 bytes, no newline): the write was cut short",
		path + ":2: turn 1 has no turn/end: the last turn was left open",
		fmt.Sprintf("%s: truncated to %d bytes, dropping 60 torn bytes", path, len(good)),
	}
	if diff := cmp.Diff(wantWarnings, ld.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got := readFile(t, path); got != good {
		t.Errorf("after Open the file is\n%s\nwant\n%s", got, good)
	}
	ev, err := l2.AppendSync(session.TypeStepStart, session.StepStart{Turn: 1, Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Seq != 3 {
		t.Errorf("next seq = %d, want 3", ev.Seq)
	}
	ld2, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ld2.Events) != 3 || ld2.TornBytes != 0 {
		t.Errorf("reloaded %d events with %d torn bytes, want 3 and 0", len(ld2.Events), ld2.TornBytes)
	}
}

func TestOpen_TerminatesCompleteLastLine(t *testing.T) {
	stateDir := t.TempDir()
	path := session.Path(stateDir, "s1")
	log := render(rStart, rTurn1)
	writeFile(t, path, strings.TrimSuffix(log, "\n"))

	l, ld, err := session.Open(stateDir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !ld.Unterminated || ld.ValidSize != int64(len(log)) {
		t.Errorf("Unterminated = %v, ValidSize = %d; want true, %d", ld.Unterminated, ld.ValidSize, len(log))
	}
	if _, err := l.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ld2, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ld2.Events) != 3 || len(ld2.Warnings) != 0 {
		t.Errorf("reloaded %d events, warnings %q; want 3 and none", len(ld2.Events), ld2.Warnings)
	}
}

func TestLog_AppendAfterClose(t *testing.T) {
	_, l := create(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1}); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Append after Close: err = %v, want ErrClosed", err)
	}
	if err := l.Sync(); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Sync after Close: err = %v, want ErrClosed", err)
	}
}

// TestLog_AppendRefusesInvalid: the writer checks the same rules as the
// loader, refuses before writing, and stays usable.
func TestLog_AppendRefusesInvalid(t *testing.T) {
	stateDir, l := create(t)
	tests := []struct {
		name string
		typ  string
		data any
		msg  string
	}{
		{"step outside a turn", session.TypeStepStart, session.StepStart{Turn: 1, Step: 1}, "step/start for turn 1 outside a turn"},
		{"data is not an object", session.TypeTurnStart, "hi", "turn/start: data must be a JSON object"},
		{"unknown type", "turn/begin", session.TurnStart{Turn: 1}, `unknown event type "turn/begin"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Append(tt.typ, tt.data)
			ie, ok := errors.AsType[*session.InvariantError](err)
			if !ok {
				t.Fatalf("err = %v, want an *InvariantError", err)
			}
			want := &session.InvariantError{Path: l.Path(), Line: 2, Seq: 2, Msg: tt.msg}
			if diff := cmp.Diff(want, ie); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := l.Append(session.TypeTurnStart, func() {}); err == nil {
		t.Error("Append of unmarshalable data = nil error")
	}
	ev, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"})
	if err != nil || ev.Seq != 2 {
		t.Fatalf("valid Append after refusals = seq %d, %v; want seq 2", ev.Seq, err)
	}
	l.Close()
	ld, err := session.Load(session.Path(stateDir, "s1"))
	if err != nil || len(ld.Events) != 2 {
		t.Fatalf("Load = %v; want 2 events", err)
	}
}

func TestLog_ConcurrentAppend(t *testing.T) {
	stateDir, l := create(t)
	mustAppend(t, l, turn1[:4]...)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if _, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "x"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	ld, err := session.Load(session.Path(stateDir, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(ld.Events), 3+100; got != want {
		t.Errorf("loaded %d events, want %d", got, want)
	}
}

// TestLog_DeterministicInBubble pins the exact bytes the writer produces: in
// a synctest bubble the clock starts at 2000-01-01T00:00:00Z and moves only
// when the test sleeps, so a log can be compared byte for byte.
func TestLog_DeterministicInBubble(t *testing.T) {
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, err := session.Create(stateDir, "s1", start1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		mustAppend(t, l, turn1[:4]...)
		time.Sleep(1500 * time.Millisecond)
		ev, err := l.AppendSync(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "a\nb <&>"})
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Date(2000, 1, 1, 0, 0, 1, 5e8, time.UTC); !ev.Time.Equal(want) {
			t.Errorf("time = %v, want %v", ev.Time, want)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		want := `{"seq":1,"v":1,"time":"2000-01-01T00:00:00Z","type":"session/start","data":{"sessionId":"s1","cwd":"/w","model":"m"}}
{"seq":2,"v":1,"time":"2000-01-01T00:00:00Z","type":"turn/start","data":{"turn":1,"prompt":[{"type":"text","text":"hi"}],"text":"hi"}}
{"seq":3,"v":1,"time":"2000-01-01T00:00:00Z","type":"step/start","data":{"turn":1,"step":1,"model":"m"}}
{"seq":4,"v":1,"time":"2000-01-01T00:00:01.5Z","type":"assistant/chunk","data":{"turn":1,"step":1,"text":"a\nb \u003c\u0026\u003e"}}
`
		if diff := cmp.Diff(want, readFile(t, l.Path())); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
