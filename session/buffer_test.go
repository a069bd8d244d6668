package session_test

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rebound-agent/rebound/session"
)

// writes records every Write a Log makes to its file, and fails them with
// err once it is set.
type writes struct {
	w io.Writer

	mu    sync.Mutex
	sizes []int
	err   error
}

func (c *writes) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.sizes = append(c.sizes, len(p))
	return c.w.Write(p)
}

func (c *writes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sizes)
}

func (c *writes) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// counted creates a log (already holding its synced session/start) whose
// writes are counted from then on. Call it inside the bubble: the log's
// timer must belong to it.
func counted(t *testing.T, stateDir string) (*session.Log, *writes) {
	t.Helper()
	l, err := session.Create(stateDir, "s1", start1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	w := &writes{}
	session.WrapWriter(l, func(f io.Writer) io.Writer { w.w = f; return w })
	return l, w
}

// onDisk is how many events a fresh Load finds in the log's file.
func onDisk(t *testing.T, l *session.Log) int {
	t.Helper()
	ld, err := session.Load(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	return len(ld.Events)
}

// An appended record reaches the file FlushDelay after the first unwritten
// record, not before, and all pending records go in one Write.
func TestLog_AppendIsWrittenWithinFlushDelay(t *testing.T) {
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, w := counted(t, stateDir)
		mustAppend(t, l, turn1[:6]...) // turn/start, step/start, chunk at 0 ms
		if n := onDisk(t, l); n != 1 || w.count() != 0 {
			t.Fatalf("right after Append: %d events on disk, %d writes; want 1 (session/start) and 0", n, w.count())
		}
		time.Sleep(session.FlushDelay - 40*time.Millisecond)
		mustAppend(t, l, turn1[6:8]...) // chunk at 60 ms
		time.Sleep(40*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if n := onDisk(t, l); n != 1 || w.count() != 0 {
			t.Fatalf("1 ns before %v: %d events on disk, %d writes; want 1 and 0", session.FlushDelay, n, w.count())
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if n := onDisk(t, l); n != 5 || w.count() != 1 {
			t.Fatalf("%v after the first Append: %d events on disk in %d writes; want 5 in 1", session.FlushDelay, n, w.count())
		}

		// The timer is armed again by the next record, from its own time.
		time.Sleep(time.Second)
		mustAppend(t, l, turn1[8:10]...)
		time.Sleep(session.FlushDelay)
		synctest.Wait()
		if n := onDisk(t, l); n != 6 || w.count() != 2 {
			t.Fatalf("after the second batch: %d events on disk in %d writes; want 6 in 2", n, w.count())
		}
		// An idle log does not write.
		time.Sleep(time.Hour)
		synctest.Wait()
		if w.count() != 2 {
			t.Errorf("an idle log wrote: %d writes, want 2", w.count())
		}
	})
}

// Flush, Sync, AppendSync and Close write everything pending with one
// Write each, and nothing when nothing is pending.
func TestLog_DurabilityPointsWriteOnce(t *testing.T) {
	tests := []struct {
		name   string
		do     func(*session.Log) error
		events int // on disk afterwards
	}{
		{"Flush", (*session.Log).Flush, 4},
		{"Sync", (*session.Log).Sync, 4},
		{"AppendSync", func(l *session.Log) error {
			_, err := l.AppendSync(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "lo"})
			return err
		}, 5},
		{"Close", (*session.Log).Close, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stateDir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				l, w := counted(t, stateDir)
				mustAppend(t, l, turn1[:6]...)
				if err := tt.do(l); err != nil {
					t.Fatal(err)
				}
				if n := onDisk(t, l); n != tt.events || w.count() != 1 {
					t.Errorf("after %s: %d events on disk in %d writes; want %d in 1", tt.name, n, w.count(), tt.events)
				}
				if tt.name == "Close" {
					return
				}
				if err := tt.do(l); err != nil {
					t.Fatal(err)
				}
				if tt.name != "AppendSync" && w.count() != 1 {
					t.Errorf("%s with nothing pending wrote: %d writes, want 1", tt.name, w.count())
				}
				// The timer armed by the first Append finds nothing to do.
				time.Sleep(session.FlushDelay)
				synctest.Wait()
				if want := map[bool]int{true: 2, false: 1}[tt.name == "AppendSync"]; w.count() != want {
					t.Errorf("writes after the timer = %d, want %d", w.count(), want)
				}
			})
		})
	}
}

// More than FlushSize pending is written at once, by the Append that made
// it so, without waiting for the timer.
func TestLog_FlushesOverFlushSize(t *testing.T) {
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, w := counted(t, stateDir)
		mustAppend(t, l, turn1[:4]...) // turn/start, step/start
		chunk := session.AssistantChunk{Turn: 1, Step: 1, Text: strings.Repeat("x", 1000)}
		appended := 2
		for w.count() == 0 {
			if appended > 200 {
				t.Fatalf("no write after %d records of over 1000 bytes", appended)
			}
			mustAppend(t, l, session.TypeAssistantChunk, chunk)
			appended++
		}
		if n := onDisk(t, l); n != 1+appended {
			t.Errorf("%d events on disk, want all %d appended and session/start", n, appended)
		}
		if size := w.sizes[0]; size <= session.FlushSize || size > session.FlushSize+1200 {
			t.Errorf("the write was %d bytes, want just over %d", size, session.FlushSize)
		}
		if appended < session.FlushSize/1100 {
			t.Errorf("written after %d records, too early", appended)
		}
	})
}

// Close writes what is pending; the timer it stops writes nothing after.
func TestLog_CloseFlushesAndStopsTimer(t *testing.T) {
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, w := counted(t, stateDir)
		appended := mustAppend(t, l, turn1...)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		if w.count() != 1 {
			t.Errorf("%d writes, want the one by Close", w.count())
		}
		ld, err := session.Load(l.Path())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ld.Events[len(ld.Events)-1].Seq, appended[len(appended)-1].Seq; len(ld.Events) != 8 || got != want {
			t.Errorf("loaded %d events up to seq %d, want 8 up to %d", len(ld.Events), got, want)
		}
	})
}

// A write that fails on the timer is not lost: every later call reports
// it, and nothing more is written.
func TestLog_WriteErrorIsSticky(t *testing.T) {
	errDisk := errors.New("disk full")
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, w := counted(t, stateDir)
		w.fail(errDisk)
		if _, err := l.Append(session.TypeTurnStart, session.TurnStart{Turn: 1, Text: "hi"}); err != nil {
			t.Fatalf("Append = %v; the write comes later", err)
		}
		time.Sleep(session.FlushDelay)
		synctest.Wait()
		w.fail(nil) // the disk recovers; the log stays poisoned
		if _, err := l.Append(session.TypeStepStart, session.StepStart{Turn: 1, Step: 1}); !errors.Is(err, errDisk) {
			t.Errorf("Append after the failed write: err = %v, want %v", err, errDisk)
		}
		if _, err := l.AppendSync(session.TypeStepStart, session.StepStart{Turn: 1, Step: 1}); !errors.Is(err, errDisk) {
			t.Errorf("AppendSync: err = %v, want %v", err, errDisk)
		}
		for _, c := range []struct {
			name string
			f    func() error
		}{{"Flush", l.Flush}, {"Sync", l.Sync}, {"Close", l.Close}} {
			if err := c.f(); !errors.Is(err, errDisk) {
				t.Errorf("%s: err = %v, want %v", c.name, err, errDisk)
			}
		}
		if w.count() != 0 {
			t.Errorf("%d writes after the failure, want 0", w.count())
		}
	})
}

// A failing Flush returns the error itself, and poisons the log too.
func TestLog_FlushError(t *testing.T) {
	errDisk := errors.New("disk full")
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, w := counted(t, stateDir)
		mustAppend(t, l, turn1[:2]...)
		w.fail(errDisk)
		if err := l.Flush(); !errors.Is(err, errDisk) {
			t.Errorf("Flush: err = %v, want %v", err, errDisk)
		}
		if _, err := l.Append(session.TypeStepStart, session.StepStart{Turn: 1, Step: 1}); !errors.Is(err, errDisk) {
			t.Errorf("Append after the failed Flush: err = %v, want %v", err, errDisk)
		}
	})
}

// Appends racing with the timer's writes lose and reorder nothing (run with
// -race).
func TestLog_ConcurrentAppendWithTimer(t *testing.T) {
	stateDir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		l, _ := counted(t, stateDir)
		mustAppend(t, l, turn1[:4]...) // turn/start, step/start
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					if _, err := l.Append(session.TypeAssistantChunk, session.AssistantChunk{Turn: 1, Step: 1, Text: "x"}); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(7 * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if n := onDisk(t, l); n != 3+200 {
			t.Errorf("%d events on disk, want %d", n, 3+200)
		}
	})
}
