package session_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rebound-agent/rebound/internal/filelock"
	"github.com/rebound-agent/rebound/session"
)

// One writer per log: while a Log has the session open, a second Open of
// the same session fails with a *LockedError and touches nothing. flock
// locks belong to an open file, so two Logs in one process conflict just
// as two processes do (so do LockFileEx locks, which belong to a handle).
// Closing the first lets the second in.
func TestOpen_OneWriterPerLog(t *testing.T) {
	if !filelock.Supported {
		t.Skip("no file locks")
	}
	named := runtime.GOOS == "linux" || runtime.GOOS == "windows"
	stateDir, l := create(t)
	mustAppend(t, l, turn1[:2]...)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, l.Path())

	_, _, err := session.Open(stateDir, "s1")
	le, ok := errors.AsType[*session.LockedError](err)
	if !ok || !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Open while Create's Log is open: err = %v, want a *LockedError matching ErrLocked", err)
	}
	if named && le.PID != os.Getpid() {
		t.Errorf("PID = %d, want this process, %d", le.PID, os.Getpid())
	}
	if want := "session s1 is being written by another Rebound process (pid "; named && (!strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); try again once it has finished there")) {
		t.Errorf("message %q, want %q…); try again once it has finished there", err, want)
	}
	// The refused Open neither repaired nor appended: the writer goes on.
	mustAppend(t, l, turn1[2:]...)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, l.Path()); !strings.HasPrefix(got, before) || onDiskEvents(t, l.Path()) != 8 {
		t.Errorf("the log changed under its writer or lost events:\n%s", got)
	}

	l2, _, err := session.Open(stateDir, "s1")
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	defer l2.Close()
	if _, _, err := session.Open(stateDir, "s1"); !errors.Is(err, session.ErrLocked) {
		t.Errorf("Open while Open's Log is open: err = %v, want ErrLocked", err)
	}
}

func onDiskEvents(t *testing.T, path string) int {
	t.Helper()
	ld, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(ld.Events)
}

// A state dir that can't hold logs fails Create with a *WriteError that
// names the log once ("create session log: create session log: …" was
// the old wording) and leaves nothing behind.
func TestCreate_UnwritableStateDir(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	writeFile(t, stateDir, "not a directory") // MkdirAll fails even as root
	_, err := session.Create(stateDir, "s1", start1)
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok {
		t.Fatalf("err = %v, want a *WriteError", err)
	}
	want := "Rebound could not create its session log " + session.Path(stateDir, "s1") + ": mkdir " + stateDir + ": not a directory"
	if err.Error() != want || we.Op != "create" {
		t.Errorf("err = %q, want %q", err, want)
	}
	if strings.Count(err.Error(), "create") != 1 {
		t.Errorf("the prefix is repeated: %q", err)
	}
}

// A failed write (a full disk) is a *WriteError naming the log and the
// cause, kept by the Log (Err) for every later call; closing and opening
// again repairs the torn tail the write left, and the log works again.
func TestLog_FullDiskThenRecovers(t *testing.T) {
	stateDir, l := create(t)
	mustAppend(t, l, turn1[:2]...)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	// The disk fills up halfway through the next write.
	session.WrapWriter(l, func(w io.Writer) io.Writer { return &fullDisk{w: w, path: l.Path(), room: 20} })
	mustAppend(t, l, turn1[2:4]...)
	err := l.Sync()
	we, ok := errors.AsType[*session.WriteError](err)
	if !ok || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Sync on a full disk = %v, want a *WriteError wrapping ENOSPC", err)
	}
	if want := "Rebound could not write its session log " + l.Path() + ": no space left on device"; we.Error() != want {
		t.Errorf("message %q, want %q", we.Error(), want)
	}
	if got := l.Err(); got != error(we) {
		t.Errorf("Err() = %v, want the write error", got)
	}
	if _, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "x"}); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Append after the failure = %v, want the write error", err)
	}
	l.Close()

	l2, ld, err := session.Open(stateDir, "s1")
	if err != nil {
		t.Fatalf("Open after the disk recovered: %v", err)
	}
	defer l2.Close()
	if ld.TornBytes != 20 || len(ld.Events) != 2 || ld.OpenTurn != 1 {
		t.Errorf("reopened: %d torn bytes, %d events, open turn %d; want 20, 2, 1", ld.TornBytes, len(ld.Events), ld.OpenTurn)
	}
	if l2.Err() != nil {
		t.Errorf("Err() of the reopened log = %v", l2.Err())
	}
	mustAppend(t, l2, turn1[2:]...)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if n := onDiskEvents(t, l2.Path()); n != 8 {
		t.Errorf("%d events after recovery, want 8", n)
	}
}

// fullDisk writes room bytes, then fails as a full disk does.
type fullDisk struct {
	w    io.Writer
	path string
	room int
}

func (d *fullDisk) Write(p []byte) (int, error) {
	n := min(len(p), d.room)
	n, err := d.w.Write(p[:n])
	d.room -= n
	if err == nil && n < len(p) {
		err = &os.PathError{Op: "write", Path: d.path, Err: syscall.ENOSPC}
	}
	return n, err
}

// turn is a whole successful turn n, as the agent writes it.
func turn(n int, text string) []any {
	return []any{
		session.TypeTurnStart, session.TurnStart{Turn: n, Prompt: json.RawMessage(`[{"type":"text","text":"` + text + `"}]`), Text: text},
		session.TypeStepStart, session.StepStart{Turn: n, Step: 1, Model: "m"},
		session.TypeAssistantChunk, session.AssistantChunk{Turn: n, Step: 1, Text: "o"},
		session.TypeAssistantChunk, session.AssistantChunk{Turn: n, Step: 1, Text: "k"},
		session.TypeAssistantMessage, session.AssistantMessage{Turn: n, Step: 1, MessageID: fmt.Sprintf("msg_%d", n), Text: "ok", FinishReason: "stop"},
		session.TypeStepEnd, session.StepEnd{Turn: n, Step: 1, Outcome: session.OutcomeOK},
		session.TypeTurnEnd, session.TurnEnd{Turn: n, StopReason: "end_turn"},
	}
}

func mustLock(t *testing.T, l *session.Log) *session.Loaded {
	t.Helper()
	ld, err := l.Lock()
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	return ld
}

func mustUnlock(t *testing.T, l *session.Log) {
	t.Helper()
	if err := l.Unlock(); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func seqs(evs []session.Event) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Seq)
	}
	return out
}

// Two Logs of one session (two Rebound processes) take turns writing it:
// each Lock reads only what the other appended since (a Tail), buffered
// appends are written and synced by Unlock, and the file stays one valid
// log with seq going up by one across the writers.
func TestLog_TwoWritersTakeTurns(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	stateDir, a := create(t)
	mustUnlock(t, a)
	b, ld, err := session.OpenShared(stateDir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if len(ld.Events) != 1 || ld.Tail || b.Locked() {
		t.Fatalf("OpenShared: %d events, tail %v, locked %v; want the session/start, whole, unlocked", len(ld.Events), ld.Tail, b.Locked())
	}

	mustLock(t, a)
	mustAppend(t, a, turn(1, "one")...) // buffered, not yet written
	if _, err := b.Lock(); !errors.Is(err, session.ErrLocked) {
		t.Fatalf("Lock while the other writes = %v, want ErrLocked", err)
	}
	mustUnlock(t, a)

	got := mustLock(t, b)
	// The chunks of a run are joined, as Open joins them.
	if !got.Tail || len(got.Events) != 6 || got.Events[0].Seq != 2 || got.OpenTurn != 0 {
		t.Fatalf("Lock after the other's turn: tail %v, seqs %v, open turn %d; want the 6 events of turn 1 from seq 2", got.Tail, seqs(got.Events), got.OpenTurn)
	}
	mustAppend(t, b, turn(2, "two")...)
	if _, err := b.Append(session.TypeTurnStart, session.TurnStart{Turn: 2}); err == nil {
		t.Fatal("the checker did not follow what b read: turn 2 started twice")
	}
	mustUnlock(t, b)

	got = mustLock(t, a)
	if !got.Tail || len(got.Events) != 6 || got.Events[0].Seq != 9 {
		t.Fatalf("Lock after b's turn: tail %v, seqs %v; want turn 2 from seq 9", got.Tail, seqs(got.Events))
	}
	if _, err := a.Append(session.TypeTurnStart, session.TurnStart{Turn: 3, Prompt: json.RawMessage(`[]`)}); err != nil {
		t.Fatalf("a's turn 3: %v", err)
	}
	mustUnlock(t, a)
	if _, err := a.Append(session.TypeTurnEnd, session.TurnEnd{Turn: 3, StopReason: "end_turn"}); !errors.Is(err, session.ErrNotLocked) {
		t.Errorf("Append without the lock = %v, want ErrNotLocked", err)
	}
	// Reading without the lock: b sees a's open turn, and does not take it
	// for one left open by a dead writer (no warning).
	got, err = b.Refresh()
	if err != nil || len(got.Events) != 1 || got.OpenTurn != 3 || len(got.Warnings) != 0 {
		t.Fatalf("Refresh = %v, %d events, open turn %d, warnings %q; want turn 3's start, open, no warning", err, len(got.Events), got.OpenTurn, got.Warnings)
	}
	if n := onDiskEvents(t, a.Path()); n != 16 {
		t.Errorf("%d events on disk, want 16", n)
	}
}

// A Log that reads without the lock takes only whole lines: the line a
// writer is in the middle of is read once it is whole. A torn tail left by
// a writer that died is repaired by the next Lock, which needs the lock.
func TestLog_PartialAndTornTails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	stateDir, a := create(t)
	mustUnlock(t, a)
	b, _, err := session.OpenShared(stateDir, "s1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	whole := line(2, session.TypeTurnStart, `{"turn":1,"prompt":[],"text":"hi"}`)
	appendRaw(t, a.Path(), whole[:20])
	got, err := b.Refresh()
	if err != nil || len(got.Events) != 0 || got.TornBytes != 0 || len(got.Warnings) != 0 {
		t.Fatalf("Refresh with half a line = %v, %d events, %d torn, %q; want nothing read, nothing said", err, len(got.Events), got.TornBytes, got.Warnings)
	}
	appendRaw(t, a.Path(), whole[20:])
	if got, err := b.Refresh(); err != nil || len(got.Events) != 1 || got.OpenTurn != 1 {
		t.Fatalf("Refresh with the line whole = %v, %v; want turn 1's start", err, got)
	}

	// The writer died in the middle of its next line.
	size := int64(len(readFile(t, a.Path())))
	appendRaw(t, a.Path(), `{"seq":3,"v":1,"ti`)
	got = mustLock(t, b)
	if got.TornBytes != 18 || got.ValidSize != size || got.OpenTurn != 1 {
		t.Errorf("Lock over a torn tail: %d torn bytes, valid size %d, open turn %d; want 18, %d, 1", got.TornBytes, got.ValidSize, got.OpenTurn, size)
	}
	if n := int64(len(readFile(t, a.Path()))); n != size {
		t.Errorf("the file is %d bytes after the repair, want %d", n, size)
	}
	mustAppend(t, b, session.TypeTurnEnd, session.TurnEnd{Turn: 1, Error: json.RawMessage(`{"code":"ABORTED"}`), Interrupted: true})
	mustUnlock(t, b)
	if got := mustLock(t, a); !got.Tail || len(got.Events) != 2 || got.OpenTurn != 0 {
		t.Errorf("a's Lock: tail %v, seqs %v, open turn %d; want seqs 2 and 3, closed", got.Tail, seqs(got.Events), got.OpenTurn)
	}
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// A file changed otherwise than by appends is read again whole (Tail is
// false): replaced by another file, truncated, or rewritten where this Log
// had read. A removed log is not found, and is not written.
func TestLog_ChangedFileIsReadAgain(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	two := render(rStart, rTurn1, rStep1, rMessage1, rStepEnd1, rTurnEnd1)
	other := strings.Replace(two, `"text":"Hello"`, `"text":"Howdy"`, 1)
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
		events int
	}{
		{"replaced", func(t *testing.T, path string) {
			writeFile(t, path+".new", two)
			if err := os.Rename(path+".new", path); err != nil {
				t.Fatal(err)
			}
		}, 6},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, int64(len(line(1, rStart.typ, rStart.data)))); err != nil {
				t.Fatal(err)
			}
		}, 1},
		{"rewritten in place", func(t *testing.T, path string) {
			writeFile(t, path, other+line(7, rTurn1.typ, strings.Replace(rTurn1.data, `"turn":1`, `"turn":2`, 1)))
		}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stateDir := t.TempDir()
			path := session.Path(stateDir, "s1")
			writeFile(t, path, two)
			l, ld, err := session.OpenShared(stateDir, "s1")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if len(ld.Events) != 6 {
				t.Fatalf("%d events, want 6", len(ld.Events))
			}
			tt.change(t, path)
			got := mustLock(t, l)
			if got.Tail || len(got.Events) != tt.events {
				t.Fatalf("Lock after the change: tail %v, %d events; want the whole file again, %d events", got.Tail, len(got.Events), tt.events)
			}
			// What is appended next follows the file as it is now.
			if _, err := l.AppendSync(session.TypeMode, session.Mode{Mode: "ask"}); err != nil {
				t.Fatalf("append after reading again: %v", err)
			}
			mustUnlock(t, l)
			if n := onDiskEvents(t, path); n != tt.events+1 {
				t.Errorf("%d events on disk, want %d", n, tt.events+1)
			}
		})
	}

	t.Run("removed", func(t *testing.T) {
		stateDir, a := create(t)
		mustUnlock(t, a)
		b, _, err := session.OpenShared(stateDir, "s1")
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		// Not writing, a does not keep b from deleting the session.
		if err := session.Remove(stateDir, "s1"); err != nil {
			t.Fatalf("Remove while others have the log open, unlocked: %v", err)
		}
		if _, err := a.Lock(); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Lock of a removed log = %v, want ErrNotFound", err)
		}
		if _, err := b.Refresh(); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Refresh of a removed log = %v, want ErrNotFound", err)
		}
		if a.Locked() {
			t.Error("a failed Lock kept the lock")
		}
	})
}

// The cost of taking the lock before a write: with nothing new (one
// process), with one turn another Log appended (read as a tail), and,
// for comparison, reading a whole log of 1000 turns again.
func BenchmarkLog_Lock(b *testing.B) {
	if runtime.GOOS == "windows" {
		b.Skip("no flock")
	}
	setup := func(b *testing.B) (string, *session.Log, *session.Log) {
		stateDir := b.TempDir()
		w, err := session.Create(stateDir, "s1", start1)
		if err != nil {
			b.Fatal(err)
		}
		for n := 1; n <= 1000; n++ {
			appendTurn(b, w, n)
		}
		if err := w.Unlock(); err != nil {
			b.Fatal(err)
		}
		r, _, err := session.OpenShared(stateDir, "s1")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { w.Close(); r.Close() })
		return stateDir, w, r
	}
	b.Run("nothing new", func(b *testing.B) {
		_, _, r := setup(b)
		for b.Loop() {
			if _, err := r.Lock(); err != nil {
				b.Fatal(err)
			}
			if err := r.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one turn appended", func(b *testing.B) {
		_, w, r := setup(b)
		n := 1000
		for b.Loop() {
			b.StopTimer()
			n++
			if _, err := w.Lock(); err != nil {
				b.Fatal(err)
			}
			appendTurn(b, w, n)
			if err := w.Unlock(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			ld, err := r.Lock()
			if err != nil || len(ld.Events) != 6 {
				b.Fatalf("Lock = %v, %d events", err, len(ld.Events))
			}
			if err := r.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole log of 1000 turns", func(b *testing.B) {
		stateDir, _, _ := setup(b)
		for b.Loop() {
			l, _, err := session.OpenShared(stateDir, "s1")
			if err != nil {
				b.Fatal(err)
			}
			l.Close()
		}
	})
}

func appendTurn(tb testing.TB, l *session.Log, n int) {
	tb.Helper()
	recs := turn(n, "hello")
	for i := 0; i < len(recs); i += 2 {
		if _, err := l.Append(recs[i].(string), recs[i+1]); err != nil {
			tb.Fatal(err)
		}
	}
}

// OpenShared of a log that is nothing but an unterminated line waits for
// the lock; refused, it names the holder as Open does (it once asked
// /proc/locks about a file it had already closed, and said pid 0).
func TestOpenShared_LockedErrorNamesTheHolder(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "windows" {
		t.Skip("the holder cannot be named here")
	}
	stateDir := t.TempDir()
	path := session.Path(stateDir, "s1")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	line := `{"seq":1,"v":1,"time":"2026-01-02T03:04:05Z","type":"session/start","data":{"sessionId":"s1","cwd":"/w"}}`
	if err := os.WriteFile(path, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := session.LockFile(holder); err != nil {
		t.Fatal(err)
	}
	_, _, err = session.OpenShared(stateDir, "s1")
	le, ok := errors.AsType[*session.LockedError](err)
	if !ok {
		t.Fatalf("OpenShared while another holds the lock: err = %v, want a *LockedError", err)
	}
	if le.PID != os.Getpid() {
		t.Errorf("PID = %d, want this process, %d", le.PID, os.Getpid())
	}
}
