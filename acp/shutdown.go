package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// stopTimeout bounds how long a stopping Server waits for its running work
// to reply (turns are cancelled first, so they answer at once unless the
// output is stuck) and for the output to be written, before it closes the
// stream anyway; closeGrace more is then allowed for the work to end.
const stopTimeout = 2 * time.Second

// drainable is the work a stopper stops: inflight, or a fake.
type drainable interface {
	stop()                 // refuse new work
	idle() <-chan struct{} // closed once the running work has ended
}

// stopper ends a connection once, within a bound: it refuses new work,
// cancels what runs (cancel), waits at most stopTimeout for it to reply
// and for the output to be written, then closes the output (closeOutput,
// given what is left of the budget): output nobody has read by then is
// dropped, and work blocked writing it returns; closeGrace more is allowed
// for that work to end. So stopping is bounded even when nobody reads the
// output. It also keeps why the input ended, if that was not a plain EOF.
type stopper struct {
	work        drainable
	cancel      context.CancelCauseFunc // the base context of every request's work
	closeOutput func(time.Duration) error
	log         zerolog.Logger

	mu      sync.Mutex
	started bool
	// stopped is closed when the first stop is done; later ones wait for
	// it (a channel, not a sync.Once: a goroutine waiting on one is
	// durably blocked, so testing/synctest's clock can run).
	stopped chan struct{}
	readErr error // why the input failed, if not a plain EOF
}

func newStopper(work drainable, cancel context.CancelCauseFunc, closeOutput func(time.Duration) error, log zerolog.Logger) *stopper {
	return &stopper{work: work, cancel: cancel, closeOutput: closeOutput, log: log, stopped: make(chan struct{})}
}

// inputEnded records why the input ended (unless stopping had already
// begun, or it is io.EOF), and stops.
func (st *stopper) inputEnded(err error) {
	st.mu.Lock()
	if !st.started && !errors.Is(err, io.EOF) {
		st.readErr = fmt.Errorf("acp: connection: %w", err)
	}
	st.mu.Unlock()
	st.log.Debug().Err(err).Msg("acp: input ended")
	st.stop()
}

// err is why the input failed, if it did before stopping began.
func (st *stopper) err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.readErr
}

// stop stops the work and closes the output (see stopper). It runs once; a
// concurrent call waits for it.
func (st *stopper) stop() {
	st.mu.Lock()
	first := !st.started
	st.started = true
	st.mu.Unlock()
	if !first {
		<-st.stopped
		return
	}
	defer close(st.stopped)
	st.work.stop()
	st.cancel(ErrShutdown)

	deadline := time.Now().Add(stopTimeout)
	done := st.work.idle()
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	finished := true
	select {
	case <-done:
	case <-t.C:
		finished = false
		st.log.Warn().Dur("after", stopTimeout).Msg("acp: requests still running at shutdown; closing the output")
	}
	if err := st.closeOutput(time.Until(deadline)); err != nil {
		st.log.Warn().Err(err).Msg("acp: output lost at shutdown")
	}
	if !finished {
		t.Reset(closeGrace)
		select {
		case <-done:
		case <-t.C:
			st.log.Warn().Msg("acp: the agent did not stop; leaving its requests unanswered")
		}
	}
}
