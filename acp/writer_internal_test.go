package acp

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// gatedWriter records each Write, and blocks each until let through.
type gatedWriter struct {
	mu     sync.Mutex
	writes []string
	gate   chan struct{} // nil: never blocks
	err    error
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), w.err
}

func (w *gatedWriter) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.writes...)
}

// Lines written while the writer goroutine writes go out together in its
// next Write, in order.
func TestLineWriter_Batches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &gatedWriter{gate: make(chan struct{})}
		w := newLineWriter(out, nil)
		for i, l := range []string{"a\n", "b\n", "c\n"} {
			if err := w.write([]byte(l)); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				synctest.Wait() // the goroutine took "a" and waits in Write
			}
		}
		close(out.gate)
		synctest.Wait()
		if got := out.all(); len(got) != 2 || got[0] != "a\n" || got[1] != "b\nc\n" {
			t.Fatalf("writes = %q, want [a] then [b c]", got)
		}
		if w.writing {
			t.Fatal("the writer goroutine did not end")
		}
	})
}

// An idle line is written by the caller when writeNow takes it; when
// writeNow says it would block, the goroutine writes it, ahead of what was
// queued meanwhile.
func TestLineWriter_WriteNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &gatedWriter{}
		var now []string
		takes := true
		var w *lineWriter
		w = newLineWriter(out, func(p []byte) (bool, error) {
			if !takes {
				// Another turn's line comes while this one is tried.
				takes = true
				if err := w.write([]byte("c\n")); err != nil {
					t.Error(err)
				}
				return false, nil
			}
			now = append(now, string(p))
			return true, nil
		})
		if err := w.write([]byte("a\n")); err != nil {
			t.Fatal(err)
		}
		if len(now) != 1 || len(out.all()) != 0 {
			t.Fatalf("idle line: written now %q, by the goroutine %q; want now", now, out.all())
		}
		takes = false
		out.gate = make(chan struct{})
		if err := w.write([]byte("b\n")); err != nil {
			t.Fatal(err)
		}
		close(out.gate)
		synctest.Wait()
		if got := strings.Join(out.all(), ""); got != "b\nc\n" {
			t.Fatalf("the goroutine wrote %q, want b then c", got)
		}
	})
}

// A failed Write fails every later write, without writing; Close reports it.
func TestLineWriter_ErrorSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		out := &gatedWriter{err: boom}
		w := newLineWriter(out, nil)
		_ = w.write([]byte("a\n"))
		synctest.Wait()
		for range 3 {
			if err := w.write([]byte("b\n")); !errors.Is(err, boom) {
				t.Fatalf("write after a failed Write = %v, want %v", err, boom)
			}
		}
		if len(out.all()) != 1 {
			t.Fatalf("%d Writes, want the failed one only", len(out.all()))
		}
		if err := w.close(time.Second, func() error { return nil }); !errors.Is(err, boom) {
			t.Fatalf("close = %v, want the write error", err)
		}
	})
}

// Once the input has ended, a write returns when its line is written.
func TestLineWriter_SyncAfterInputEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &gatedWriter{gate: make(chan struct{})}
		w := newLineWriter(out, nil)
		w.inputEnded(false)
		returned := make(chan error)
		go func() { returned <- w.write([]byte("a\n")) }()
		synctest.Wait()
		select {
		case <-returned:
			t.Fatal("write returned before its line was written")
		default:
		}
		close(out.gate)
		if err := <-returned; err != nil {
			t.Fatal(err)
		}
	})
}

// Nobody reads: close waits d for the output, closes the underlying stream,
// waits closeGrace for the writer, then says what it dropped; writes
// waiting for room give up, and later ones fail.
func TestLineWriter_CloseWhenNobodyReads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &gatedWriter{gate: make(chan struct{})}
		w := newLineWriter(out, nil)
		_ = w.write([]byte("a\n"))
		synctest.Wait()
		big := bytes.Repeat([]byte("x"), maxPending-1)
		_ = w.write(append(big, '\n'))
		blocked := make(chan error)
		go func() { blocked <- w.write([]byte("c\n")) }() // waits for room
		synctest.Wait()
		start := time.Now()
		var closedAt time.Duration
		err := w.close(500*time.Millisecond, func() error { closedAt = time.Since(start); return nil })
		if closedAt != 500*time.Millisecond || time.Since(start) != 500*time.Millisecond+closeGrace {
			t.Fatalf("underlying stream closed after %v, close returned after %v", closedAt, time.Since(start))
		}
		if err == nil || !strings.Contains(err.Error(), "bytes dropped") {
			t.Fatalf("close = %v, want what was dropped", err)
		}
		if err := <-blocked; !errors.Is(err, errStreamClosed) {
			t.Fatalf("write waiting for room = %v, want errStreamClosed", err)
		}
		if err := w.write([]byte("d\n")); !errors.Is(err, errStreamClosed) {
			t.Fatalf("write after close = %v", err)
		}
		if err := w.close(time.Second, nil); err != nil {
			t.Fatalf("second close = %v, want nil", err)
		}
		close(out.gate)
	})
}
