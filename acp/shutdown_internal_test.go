package acp

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// fakeWork is drainable work that ends when end is closed.
type fakeWork struct {
	mu      sync.Mutex
	stopped bool
	end     chan struct{}
}

func (w *fakeWork) stop()                 { w.mu.Lock(); w.stopped = true; w.mu.Unlock() }
func (w *fakeWork) idle() <-chan struct{} { return w.end }

// outputCloser records what a stopper gives it.
type outputCloser struct {
	mu     sync.Mutex
	calls  int
	budget time.Duration
	at     time.Time
}

func (c *outputCloser) close(d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	c.budget, c.at = d, time.Now()
	return nil
}

// Work that replies at once: the output is closed with what is left of
// stopTimeout, after the work was refused and cancelled.
func TestStopper_WorkThatEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWork{end: make(chan struct{})}
		var cause error
		ctx, cancel := context.WithCancelCause(context.Background())
		var out outputCloser
		st := newStopper(w, cancel, out.close, zerolog.Nop())
		go func() {
			<-ctx.Done()
			cause = context.Cause(ctx)
			time.Sleep(300 * time.Millisecond) // the turns reply
			close(w.end)
		}()
		start := time.Now()
		st.stop()
		if !w.stopped || !errors.Is(cause, ErrShutdown) {
			t.Fatalf("stop: work stopped %v, cause %v; want stopped and ErrShutdown", w.stopped, cause)
		}
		if out.calls != 1 || out.budget != stopTimeout-300*time.Millisecond || out.at.Sub(start) != 300*time.Millisecond {
			t.Fatalf("output closed %d times, with %v left, after %v; want once, %v left, after 300ms",
				out.calls, out.budget, out.at.Sub(start), stopTimeout-300*time.Millisecond)
		}
	})
}

// Work that never ends: the output is closed with no budget left after
// stopTimeout, and stop returns closeGrace later.
func TestStopper_WorkThatHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWork{end: make(chan struct{})}
		var out outputCloser
		st := newStopper(w, func(error) {}, out.close, zerolog.Nop())
		start := time.Now()
		st.stop()
		if got := time.Since(start); got != stopTimeout+closeGrace {
			t.Fatalf("stop returned after %v, want %v", got, stopTimeout+closeGrace)
		}
		if out.calls != 1 || out.budget > 0 || out.at.Sub(start) != stopTimeout {
			t.Fatalf("output closed %d times with %v left after %v; want once, none left, after %v", out.calls, out.budget, out.at.Sub(start), stopTimeout)
		}
		close(w.end)
	})
}

// stop runs once; a concurrent call returns when the first is done.
func TestStopper_Once(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &fakeWork{end: make(chan struct{})}
		var out outputCloser
		st := newStopper(w, func(error) {}, out.close, zerolog.Nop())
		go st.stop()
		synctest.Wait()
		second := make(chan struct{})
		go func() { st.stop(); close(second) }()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("a second stop returned before the first was done")
		default:
		}
		close(w.end)
		<-second
		if out.calls != 1 {
			t.Fatalf("output closed %d times, want once", out.calls)
		}
	})
}

// The input's error is kept unless it is EOF or stopping had begun.
func TestStopper_InputError(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stopped bool
		err     error
		want    bool
	}{
		{"eof", false, io.EOF, false},
		{"wrapped eof", false, errors.Join(errors.New("read"), io.EOF), false},
		{"broken", false, io.ErrUnexpectedEOF, true},
		{"broken after stop", true, io.ErrUnexpectedEOF, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := &fakeWork{end: make(chan struct{})}
				close(w.end)
				var out outputCloser
				st := newStopper(w, func(error) {}, out.close, zerolog.Nop())
				if tc.stopped {
					st.stop()
				}
				st.inputEnded(tc.err)
				if got := st.err(); (got != nil) != tc.want || tc.want && !errors.Is(got, tc.err) {
					t.Fatalf("err() = %v, want an error: %v", got, tc.want)
				}
				if out.calls != 1 {
					t.Fatalf("output closed %d times, want once", out.calls)
				}
			})
		})
	}
}
