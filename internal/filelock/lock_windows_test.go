package filelock

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/windows"
)

// holder finds whichever pid byte is locked, for pids nobody wrote down
// (the edges of the DWORD range, and random ones), through another handle.
func TestHolderSearch_AnyPidWindows(t *testing.T) {
	a, b := twoHandles(t)
	rng := rand.New(rand.NewPCG(1, 2))
	pids := []uint32{1, 2, 3, 4, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff}
	for range 40 {
		pids = append(pids, rng.Uint32()|1)
	}
	for _, pid := range pids {
		if err := lockRange(a, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, pidOffset(pid), 1); err != nil {
			t.Fatalf("pid %#x: %v", pid, err)
		}
		if got := holder(b); uint64(got) != uint64(pid) {
			t.Errorf("holder with pid byte %#x locked = %#x", pid, got)
		}
		if err := unlockRange(a, pidOffset(pid), 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := holder(b); got != 0 {
		t.Errorf("holder with nothing locked = %d, want 0", got)
	}
}

// Probes are shared locks: many at once, through many handles, neither
// refuse each other nor stop a new holder from naming itself, and every
// one names the holder.
func TestHolder_ConcurrentProbesWindows(t *testing.T) {
	path := filepath.Join(tempDir(t), "f")
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := tryLock(a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			f, err := os.Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			for range 20 {
				// 0 while the lock changes hands below.
				if got := holder(f); got != os.Getpid() && got != 0 {
					t.Errorf("holder = %d, want %d", got, os.Getpid())
					return
				}
			}
		})
	}
	// Meanwhile the lock changes hands: the new holder's name waits out
	// the probes.
	for range 20 {
		if err := unlock(a); err != nil {
			t.Fatal(err)
		}
		if err := lock(a); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	b, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := holder(b); got != os.Getpid() {
		t.Errorf("holder after the probes = %d, want %d", got, os.Getpid())
	}
}

// Unlock lets go of the name with the lock: the pid byte is free, and an
// Unlock of a lock whose name could not be taken still lets go.
func TestUnlock_LetsGoOfTheNameWindows(t *testing.T) {
	a, b := twoHandles(t)
	if err := tryLock(a); err != nil {
		t.Fatal(err)
	}
	if err := unlock(a); err != nil {
		t.Fatal(err)
	}
	if held, err := probe(b, pidOffset(uint32(os.Getpid())), 1); err != nil || held {
		t.Errorf("pid byte after Unlock: held %v, %v", held, err)
	}
	// A lock without its name (markHolder failed).
	if err := lockRange(a, windows.LOCKFILE_EXCLUSIVE_LOCK, mainOffset, 1); err != nil {
		t.Fatal(err)
	}
	if got := holder(b); got != 0 {
		t.Errorf("holder of an unnamed lock = %d, want 0", got)
	}
	if err := unlock(a); err != nil {
		t.Fatalf("Unlock of an unnamed lock: %v", err)
	}
	if err := tryLock(b); err != nil && !errors.Is(err, ErrHeld) {
		t.Fatal(err)
	} else if err != nil {
		t.Error("the lock stayed held after Unlock")
	}
}

// twoHandles opens one new file twice, as two processes would: a creates it.
func twoHandles(t *testing.T) (a, b *os.File) {
	t.Helper()
	path := filepath.Join(tempDir(t), "f")
	a, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return a, b
}
