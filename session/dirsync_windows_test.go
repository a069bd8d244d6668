package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// On Windows a directory sync that the OS refuses passes, and one that
// fails otherwise does not.
func TestSyncDir_WindowsRefusalSkipped(t *testing.T) {
	if err := syncDir(winTempDir(t)); err != nil {
		t.Fatalf("syncDir: %v", err)
	}
	orig := dirSync
	t.Cleanup(func() { dirSync = orig })
	dirSync = func(*os.File) error { return &os.PathError{Op: "sync", Err: windows.ERROR_ACCESS_DENIED} }
	if err := syncDir(winTempDir(t)); err != nil {
		t.Fatalf("syncDir refused with ERROR_ACCESS_DENIED: %v", err)
	}
	dirSync = func(*os.File) error { return &os.PathError{Op: "sync", Err: windows.ERROR_DISK_FULL} }
	if err := syncDir(winTempDir(t)); !errors.Is(err, windows.ERROR_DISK_FULL) {
		t.Fatalf("syncDir failing with ERROR_DISK_FULL: err = %v", err)
	}
}

// The log's lock is a real lock on Windows: a second handle, in this
// process or another, cannot take it while the first holds it, yet can
// still read the file; closing the first lets it in.
func TestLockFile_Windows(t *testing.T) {
	path := filepath.Join(winTempDir(t), "s.jsonl")
	if err := os.WriteFile(path, []byte("{\"seq\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := lockFile(a); err != nil {
		t.Fatalf("first lock: %v", err)
	}
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := lockFile(b); !errors.Is(err, errLockHeld) {
		t.Fatalf("second handle's lock while the first holds it: err = %v, want errLockHeld", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "{\"seq\":1}\n" {
		t.Fatalf("reading the locked log: %q, %v", got, err)
	}
	if _, err := a.Write([]byte("{\"seq\":2}\n")); err != nil {
		t.Fatalf("the holder appending: %v", err)
	}
	if err := unlockFile(a); err != nil {
		t.Fatalf("unlock: %v", err)
	}
	if err := lockFile(b); err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := lockFile(a); !errors.Is(err, errLockHeld) {
		t.Fatalf("first handle relocking while the second holds it: err = %v", err)
	}
	b.Close()
	if err := lockFile(a); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
	a.Close()
}

// winTempDir is t.TempDir without its failure on clean-up: Wine 8 cannot
// run os.RemoveAll's POSIX-semantics delete ("Invalid function"), and the
// smoke script runs these tests under Wine. What is left is in %TEMP%.
func winTempDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "rebound-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// A session locked by another Log (here, in this process; another process
// is the same to the lock) is refused with an error that names the
// holder's pid, as on Linux.
func TestLockedErrorNamesTheHolderWindows(t *testing.T) {
	stateDir := winTempDir(t)
	l, err := Create(stateDir, "s1", SessionStart{SessionID: "s1", Cwd: `C:\w`})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, _, err = Open(stateDir, "s1")
	le, ok := errors.AsType[*LockedError](err)
	if !ok {
		t.Fatalf("Open while Create's Log is open: err = %v, want a *LockedError", err)
	}
	if le.PID != os.Getpid() {
		t.Errorf("PID = %d, want this process, %d", le.PID, os.Getpid())
	}
	if want := fmt.Sprintf("(pid %d)", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not say %s", err, want)
	}
}
