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
func Watch(ctx context.Context, p llm.Provider, req llm.Request, t Timeouts) (llm.Stream, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &watched{cancel: cancel, t: t}
	w.arm(t.FirstToken, ErrFirstTokenTimeout)
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

	mu    sync.Mutex
	timer *time.Timer
	fired error // the watchdog error, once one fired
}

func (w *watched) arm(d time.Duration, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if d <= 0 || w.fired != nil {
		return
	}
	w.timer = time.AfterFunc(d, func() {
		w.mu.Lock()
		err := fmt.Errorf("%w (%s)", cause, d)
		w.fired = err
		w.mu.Unlock()
		w.cancel(err)
	})
}

func (w *watched) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
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
		w.arm(w.t.Idle, ErrIdleTimeout)
	}
	return c, nil
}

func (w *watched) Close() error {
	w.stop()
	err := w.inner.Close()
	w.cancel(context.Canceled)
	return err
}
