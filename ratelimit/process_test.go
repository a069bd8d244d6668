package ratelimit

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rebound-agent/rebound/recovery"
)

// TestMain lets the test binary play another Rebound process: with
// REBOUND_RATELIMIT_HELPER set it runs helper and exits.
func TestMain(m *testing.M) {
	if os.Getenv("REBOUND_RATELIMIT_HELPER") != "" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper learns a 429 into the bucket directory, then holds the bucket
// file's lock and a slot file until its stdin closes, saying "ready".
func helper() {
	dir := os.Getenv("REBOUND_RATELIMIT_HELPER")
	r := New(Options{Dir: dir, MaxInFlight: 1})
	b := r.Bucket(endpoint, key, model)
	b.Learn(t0, "helper-session", http.StatusTooManyRequests, http.Header{"Retry-After": {"6"}})
	release, err := b.Acquire(context.Background())
	if err != nil {
		os.Exit(3)
	}
	defer release()
	f, err := os.OpenFile(filepath.Join(dir, b.id+".json"), os.O_RDWR, 0)
	if err != nil {
		os.Exit(4)
	}
	if ok, _ := tryLock(f); !ok {
		os.Exit(5)
	}
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
}

func TestFileLock_BetweenProcesses(t *testing.T) {
	if !lockSupported {
		// Where Rebound ships, processes would lose each other's updates.
		if runtime.GOOS == "linux" || runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
			t.Fatalf("bucket files are not locked on %s", runtime.GOOS)
		}
		t.Skip("no file locks here")
	}
	// Not t.TempDir: the Wine smoke test runs this test, and Wine 8 cannot
	// run its clean-up (os.RemoveAll's POSIX-semantics delete).
	tmp, err := os.MkdirTemp("", "ratelimit-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	dir := filepath.Join(tmp, "ratelimit")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "REBOUND_RATELIMIT_HELPER="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("helper: %q %v", line, err)
	}
	b := New(Options{Dir: dir, MaxInFlight: 1, LockWait: -1, Jitter: noJitter}).Bucket(endpoint, key, model)
	// Its lock is seen: the file cannot be had, nor the one slot.
	if _, err := b.openLocked(b.file, -1); err != errLocked {
		t.Errorf("the other process's lock on the bucket file: %v, want errLocked", err)
	}
	if f, err := b.inflight.trySlot(); f != nil || err != nil {
		t.Errorf("the other process's slot: %v %v, want held", f, err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	// Gone, and its locks with it; what it learnt stays.
	got := b.Hold(t0.Add(time.Second), "s1")
	want := recovery.Hold{Until: t0.Add(6 * time.Second), Reason: recovery.HoldCooldown, By: recovery.HoldByOtherProcess, Source: "retry-after"}
	if got != want {
		t.Errorf("Hold = %+v, want %+v", got, want)
	}
	f, err := b.inflight.trySlot()
	if f == nil || err != nil {
		t.Fatalf("slot after the other process ended: %v %v", f, err)
	}
	f.Close()
}
