package recovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/llm"
)

// Errors of Rebound's own limits on an attempt: the watchdogs and the
// attempt timeout. Each classifies as TIMEOUT with the limit's key in
// Failure.Limit.
var (
	ErrFirstTokenTimeout = errors.New("no output from the provider within first_token_timeout")
	ErrIdleTimeout       = errors.New("the provider's stream went quiet for longer than stream_idle_timeout")
	ErrAttemptTimeout    = errors.New("the request took longer than attempt_timeout")
)

// The configuration keys of the limits, as Failure.Limit names them.
const (
	LimitFirstToken = "recovery.first_token_timeout"
	LimitIdle       = "recovery.stream_idle_timeout"
	LimitAttempt    = "recovery.attempt_timeout"
)

// Timeouts are the per-attempt watchdogs; zero disables one.
type Timeouts struct {
	FirstToken time.Duration // from the request until the first content, reasoning or tool-call delta
	Idle       time.Duration // between two deltas after that
}

// Watch starts an attempt whose HTTP request is aborted when a watchdog
// fires: cancelling the request, not just abandoning the reader, frees the
// connection and makes a blocked Recv return at once. Role-only and
// usage-only chunks do not count as output.
//
// One timer serves the attempt. A delta only notes its time; the timer,
// when it fires, re-arms itself for what is left of the idle limit if a
// delta came meanwhile. Resetting a timer on every chunk instead made the
// runtime wake a thread per chunk (the timer heap changed under a poller
// asleep), the costliest part of a chunk at a model's pace.
func Watch(ctx context.Context, p llm.Provider, req llm.Request, t Timeouts) (llm.Stream, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watched{cancel: cancel, t: t}
	w.start(t.FirstToken, ErrFirstTokenTimeout)
	s, err := p.Stream(ctx, req)
	if err != nil {
		w.stop()
		err = w.explain(err)
		cancel(err) // release the attempt's context: nobody will Close
		return nil, err
	}
	w.inner = s
	return w, nil
}

type watched struct {
	inner  llm.Stream
	cancel context.CancelCauseFunc
	t      Timeouts

	finished bool // a chunk carried a finish reason; only Recv touches it

	mu      sync.Mutex
	timer   *time.Timer
	limit   time.Duration // the running watchdog's: FirstToken, or Idle once output came
	cause   error         // the running watchdog's error
	last    time.Time     // when the limit's wait began: the request, or the last delta
	idle    bool          // output came: the idle watchdog runs (if Idle > 0)
	stopped bool
	fired   error // the watchdog error, once one fired
}

// start arms the first watchdog, from now.
func (w *watched) start(d time.Duration, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d <= 0 {
		return
	}
	w.limit, w.cause, w.last = d, cause, time.Now()
	w.timer = time.AfterFunc(d, w.expire)
}

// delta notes output: the idle limit runs from now. The first delta
// switches from the first-token limit, which needs the timer moved; later
// ones only note the time.
func (w *watched) delta() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.fired != nil {
		return
	}
	w.last = time.Now()
	if w.idle {
		return
	}
	w.idle = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.t.Idle <= 0 {
		w.timer = nil
		return
	}
	w.limit, w.cause = w.t.Idle, ErrIdleTimeout
	if w.timer == nil {
		w.timer = time.AfterFunc(w.limit, w.expire)
	} else {
		w.timer.Reset(w.limit)
	}
}

// expire runs on the timer: it fires the watchdog if its limit has passed
// since the last delta, or waits for the rest of it.
func (w *watched) expire() {
	w.mu.Lock()
	if w.stopped || w.fired != nil {
		w.mu.Unlock()
		return
	}
	if left := w.limit - time.Since(w.last); left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	err := fmt.Errorf("%w (%s)", w.cause, w.limit)
	w.fired = err
	w.mu.Unlock()
	w.cancel(err)
}

func (w *watched) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// hasFired reports whether a watchdog fired.
func (w *watched) hasFired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired != nil
}

// explain replaces the cancellation error of a request the watchdog aborted
// with the watchdog's own error.
func (w *watched) explain(err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired != nil && err != nil {
		return w.fired
	}
	return err
}

func (w *watched) Recv() (llm.Chunk, error) {
	c, err := w.inner.Recv()
	if err != nil {
		w.stop()
		if w.finished && w.hasFired() {
			// A watchdog aborted the request after the finish chunk, while
			// only usage or [DONE] was still due: the reply is complete.
			return c, io.EOF
		}
		return c, w.explain(err)
	}
	if c.FinishReason != "" {
		w.finished = true
	}
	if c.HasDelta() {
		w.delta()
	}
	return c, nil
}

func (w *watched) Close() error {
	w.stop()
	err := w.inner.Close()
	w.cancel(context.Canceled)
	return err
}
