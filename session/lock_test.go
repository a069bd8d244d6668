package session_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rebound-agent/rebound/session"
)

// One writer per log: while a Log has the session open, a second Open of
// the same session fails with a *LockedError and touches nothing. flock
// locks belong to an open file, so two Logs in one process conflict just
// as two processes do. Closing the first lets the second in.
func TestOpen_OneWriterPerLog(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
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
	if runtime.GOOS == "linux" && le.PID != os.Getpid() {
		t.Errorf("PID = %d, want this process, %d (from /proc/locks)", le.PID, os.Getpid())
	}
	if want := "session s1 is open in another Rebound process (pid "; !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "); close it there first") {
		t.Errorf("message %q, want %q…); close it there first", err, want)
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
