package filelock_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rebound-agent/rebound/internal/filelock"
	_ "github.com/rebound-agent/rebound/internal/golden" // the module's -update flag
)

// holderKnown: the platforms where Holder can name the holder.
var holderKnown = runtime.GOOS == "linux" || runtime.GOOS == "windows"

// TestMain lets the test binary be the other process: with
// FILELOCK_TEST_HOLD set it locks that file, says "ready" and holds the
// lock until its stdin closes.
func TestMain(m *testing.M) {
	if path := os.Getenv("FILELOCK_TEST_HOLD"); path != "" {
		os.Exit(hold(path))
	}
	os.Exit(m.Run())
}

func hold(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 3
	}
	if err := filelock.TryLock(f); err != nil {
		return 4
	}
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
	return 0
}

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func skipUnsupported(t *testing.T) {
	if !filelock.Supported {
		t.Skip("no file locks here")
	}
}

// The lock belongs to the open file: a second open of the file cannot take
// it until the first lets go or is closed, and is told who holds it.
func TestTryLock_SecondOpenIsRefused(t *testing.T) {
	skipUnsupported(t)
	path := filepath.Join(filelock.TempDir(t), "f")
	a, b := open(t, path), open(t, path)
	if err := filelock.TryLock(a); err != nil {
		t.Fatal(err)
	}
	if err := filelock.TryLock(b); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("second open's lock while the first holds it: %v, want ErrHeld", err)
	}
	if got := filelock.Holder(b); holderKnown && got != os.Getpid() {
		t.Errorf("Holder = %d, want this process (%d)", got, os.Getpid())
	}
	if err := filelock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := filelock.TryLock(b); err != nil {
		t.Fatalf("after Unlock: %v", err)
	}
	if err := filelock.TryLock(a); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("first open's lock while the second holds it: %v, want ErrHeld", err)
	}
	b.Close()
	if err := filelock.TryLock(a); err != nil {
		t.Fatalf("after the holder closed the file: %v", err)
	}
	c := open(t, path)
	if err := filelock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if got := filelock.Holder(c); got != 0 {
		t.Errorf("Holder of a lock no one holds = %d, want 0", got)
	}
}

// Readers and writers of the content are never refused by the lock (on
// Windows it lies past the end of any file).
func TestLock_ContentStaysUsable(t *testing.T) {
	skipUnsupported(t)
	path := filepath.Join(filelock.TempDir(t), "f")
	a, b := open(t, path), open(t, path)
	if err := filelock.TryLock(a); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteAt([]byte("written by b\n"), 0); err != nil {
		t.Fatalf("write through another open while locked: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "written by b\n" {
		t.Fatalf("read while locked: %q %v", got, err)
	}
	if _, err := a.WriteAt([]byte("WRITTEN"), 0); err != nil {
		t.Fatalf("write by the holder: %v", err)
	}
}

// Lock waits for the holder to let go.
func TestLock_Waits(t *testing.T) {
	skipUnsupported(t)
	path := filepath.Join(filelock.TempDir(t), "f")
	a, b := open(t, path), open(t, path)
	if err := filelock.Lock(a); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- filelock.Lock(b) }()
	select {
	case err := <-done:
		t.Fatalf("Lock returned (%v) while another open held the lock", err)
	default:
	}
	if err := filelock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := filelock.TryLock(a); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("after the waiter got it: %v, want ErrHeld", err)
	}
}

// Between processes: another process's lock is seen and named; it goes
// with the process.
func TestTryLock_OtherProcess(t *testing.T) {
	skipUnsupported(t)
	path := filepath.Join(filelock.TempDir(t), "f")
	f := open(t, path)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FILELOCK_TEST_HOLD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("holder: %q %v", line, err)
	}
	if err := filelock.TryLock(f); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("the other process's lock: %v, want ErrHeld", err)
	}
	if got := filelock.Holder(f); holderKnown && got != cmd.Process.Pid {
		t.Errorf("Holder = %d, want the other process (%d)", got, cmd.Process.Pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder: %v", err)
	}
	if got := filelock.Holder(f); got != 0 {
		t.Errorf("Holder once the holder is gone = %d, want 0", got)
	}
	if err := filelock.TryLock(f); err != nil {
		t.Fatalf("once the holder is gone: %v", err)
	}
}
