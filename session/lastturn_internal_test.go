package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/internal/testkit"
)

// ReadLastTurn against the events a log was written from: random logs
// (turns open, ended, closed after a crash, events after the end, big
// lines, text that quotes a turn's type, a torn last line), read with
// windows from a few bytes (every line cut; the read from the start) to
// the whole file, say the same last turn.
func TestReadLastTurn_AsTheEventsSay(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 2))
	dir := t.TempDir()
	windows := [][2]int64{{lastTurnWindow, maxLastTurnWindow}, {16, 64}, {64, 4096}, {1, 1}, {1 << 20, 1 << 20}}
	for i := range testkit.Cases(400, 100) {
		var b strings.Builder
		var want LastTurn
		clock := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
		seq := int64(0)
		line := func(typ string, data any) time.Time {
			seq++
			clock = clock.Add(time.Second)
			d, err := json.Marshal(data)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := json.Marshal(Event{Seq: seq, V: SchemaVersion, Time: clock, Type: typ, Data: d})
			if err != nil {
				t.Fatal(err)
			}
			b.Write(ev)
			b.WriteByte('\n')
			return clock
		}
		// A fork (session/fork) begins with copies of its parent's
		// finished turns, dated when it was made: they started nothing
		// here, and a fork that ran none of its own reads as never
		// prompted.
		start := SessionStart{SessionID: "s", Cwd: "/p"}
		if rng.IntN(3) == 0 {
			start.ForkedFrom = &ForkOrigin{SessionID: "parent", Turn: rng.IntN(4)}
		}
		line(TypeSessionStart, start)
		for turn := 1; turn <= rng.IntN(4); turn++ {
			start := line(TypeTurnStart, TurnStart{Turn: turn, Prompt: json.RawMessage(`[]`), Text: "quoting \"type\":\"turn/end\" here"})
			want = LastTurn{Turn: turn, Started: start, Last: start}
			for range rng.IntN(5) {
				text := strings.Repeat("x", rng.IntN(3000))
				if rng.IntN(4) == 0 {
					text += `{"type":"turn/start","data":{"turn":99}}`
				}
				want.Last = line(TypeAssistantChunk, AssistantChunk{Turn: turn, Step: 1, Text: text})
			}
			switch rng.IntN(4) {
			case 0: // cut: no end
			case 1: // closed after the crash, by a later load
				line(TypeTurnEnd, TurnEnd{Turn: turn, Interrupted: true})
				want.Ended, want.Interrupted = true, true
			default:
				want.Last = line(TypeTurnEnd, TurnEnd{Turn: turn, StopReason: "end_turn"})
				want.Ended = true
			}
			if want.Ended && rng.IntN(6) == 0 {
				// Much written after the end: a read from the start
				// refills its buffer over the line it dates the turn by.
				for range 1500 {
					line(TypeMode, Mode{Mode: "ask"})
				}
			}
			if rng.IntN(3) == 0 {
				// An option set meanwhile: in a turn still open, Rebound
				// was alive then.
				if at := line(TypeMode, Mode{Mode: "ask"}); !want.Ended {
					want.Last = at
				}
			}
		}
		switch rng.IntN(6) { // torn mid-write by a kill
		case 0:
			b.WriteString(`{"seq":99,"v":1,"time":"2026-12-06T10:00:00Z","type":"turn/st`)
		case 1:
			b.WriteString(`{"seq":99,"v":1,"time":"2026-12-06T10:00:00Z","type":"assistant/chunk","data":{"te`)
		}
		if start.ForkedFrom != nil && want.Turn <= start.ForkedFrom.Turn {
			want = LastTurn{}
		}
		path := filepath.Join(dir, fmt.Sprintf("log%d.jsonl", i))
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, w := range windows {
			got, err := readLastTurn(path, w[0], w[1])
			if err != nil {
				t.Fatal(err)
			}
			if !got.Started.Equal(want.Started) || !got.Last.Equal(want.Last) {
				t.Fatalf("log %d, windows %v: got %+v, want %+v", i, w, got, want)
			}
			got.Started, got.Last = want.Started, want.Last
			if got != want {
				t.Fatalf("log %d, windows %v: got %+v, want %+v", i, w, got, want)
			}
		}
	}
}

// ReadLastTurn refuses what is not a regular file, and says a missing log
// is not found.
func TestReadLastTurn_OnlyARegularFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadLastTurn(filepath.Join(dir, "none.jsonl")); !errorsIsNotFound(err) {
		t.Errorf("a missing log: %v, want ErrNotFound", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLastTurn(filepath.Join(dir, "d.jsonl")); err == nil {
		t.Error("a directory read as a log")
	}
}

func errorsIsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// Held says whether a Log holds the lock: this process's too (flock is
// per open file), and it lets go of what it took to find out.
func TestHeld(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	l, err := Create(dir, "sess_h", SessionStart{SessionID: "sess_h", Cwd: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := Held(dir, "sess_h"); err != nil || !held {
		t.Errorf("while Create's Log holds it: Held = %v, %v; want true", held, err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if held, err := Held(dir, "sess_h"); err != nil || held {
		t.Errorf("once let go of: Held = %v, %v; want false", held, err)
	}
	// Held let go of it: the Log takes it again.
	if _, err := l.Lock(); err != nil {
		t.Errorf("Lock after Held: %v", err)
	}
	l.Close()
	if _, err := Held(dir, "sess_none"); !errorsIsNotFound(err) {
		t.Errorf("Held of a missing log: %v, want ErrNotFound", err)
	}
	if _, err := Held(dir, "../escape"); err == nil {
		t.Error("Held of a bad id: no error")
	}
}

// Whatever a file holds, ReadLastTurn does not fail on it, and a read
// from the end in small windows, the read from the start and a read of the
// whole file at once say the same last turn.
func FuzzReadLastTurn(f *testing.F) {
	f.Add([]byte(`{"seq":1,"v":1,"time":"2026-12-06T09:00:00Z","type":"session/start","data":{"sessionId":"s","cwd":"/p"}}
{"seq":2,"v":1,"time":"2026-12-06T09:00:01Z","type":"turn/start","data":{"turn":1,"prompt":[],"text":"hi"}}
{"seq":3,"v":1,"time":"2026-12-06T09:00:02Z","type":"assistant/chunk","data":{"turn":1,"step":1,"text":"he"}}
{"seq":4,"v":1,"time":"2026-12-06T09:00:09Z","type":"turn/end","data":{"turn":1,"interrupted":true}}
`))
	f.Add([]byte(`{"seq":2,"v":1,"time":"2026-12-06T09:00:01Z","type":"turn/start","data":{"turn":3}}` + "\n" +
		`{"seq":3,"v":1,"time":"2026-12-06T09:00:02Z","type":"turn/end","data":{"turn":3,"stopReason":"end_turn"}}` + "\n" + `{"seq":4,"ti`))
	dir := f.TempDir()
	path := filepath.Join(dir, "log.jsonl")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		whole, err := readLastTurn(path, int64(len(data))+1, int64(len(data))+1)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range [][2]int64{{1, 1}, {7, 200}, {lastTurnWindow, maxLastTurnWindow}} {
			got, err := readLastTurn(path, w[0], w[1])
			if err != nil {
				t.Fatal(err)
			}
			if !got.Started.Equal(whole.Started) || !got.Last.Equal(whole.Last) {
				t.Fatalf("windows %v: %+v, the whole file: %+v", w, got, whole)
			}
			got.Started, got.Last = whole.Started, whole.Last
			if got != whole {
				t.Fatalf("windows %v: %+v, the whole file: %+v", w, got, whole)
			}
		}
	})
}
