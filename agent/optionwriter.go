package agent

import (
	"context"
	"sync"
)

// optionWriter holds a session's options and orders their changes with
// the session's records: a change made while a use of this process holds
// the log is written through that use (the writer), and joins the
// session's events ahead of the use's next record. A change with no
// writer waits for one, or takes the session itself (optionRecorder.set).
type optionWriter struct {
	// mu guards the rest, and puts the records set writes through a use
	// in order with the use's own (inOrder).
	mu sync.Mutex
	// opts are the options the log records: changed only by reading the
	// log (load), or by set once its record is synced.
	opts options
	// writer is set while a use of this process holds the log's lock and
	// may write (from acquire to done): an option is then changed through
	// it, during a turn too.
	writer bool
	// written are the records set wrote through the writer, not yet in
	// the session's events: the writer takes them at its next record, or
	// at done.
	written []pendingEvent
	// free, once made, is closed when turnMu is let go of or a use becomes
	// the writer: what a waiting set waits for.
	free chan struct{}
}

// current are the options now.
func (w *optionWriter) current() options {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opts
}

// load makes o, read from the log, the options.
func (w *optionWriter) load(o options) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opts = o
}

// whileCurrent runs f with the options, no change answered meanwhile.
func (w *optionWriter) whileCurrent(f func(options)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.opts)
}

// inOrder runs record, a record of the writer's, and takes the records set
// wrote through it meanwhile: they come first in the session's events, as
// they do in the file.
func (w *optionWriter) inOrder(record func()) []pendingEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	record()
	written := w.written
	w.written = nil
	return written
}

// become makes the current use the writer or not, and wakes the set calls
// waiting for one.
func (w *optionWriter) become(writer bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writer = writer
	w.wakeLocked()
}

// stop ends the writer's use: nothing is written through it now; it takes
// the records set wrote through it.
func (w *optionWriter) stop() []pendingEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writer = false
	written := w.written
	w.written = nil
	return written
}

// release lets go of the session (unlock) and wakes the set calls waiting for
// it, in one step for them.
func (w *optionWriter) release(unlock func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	unlock()
	w.wakeLocked()
}

// wakeLocked wakes the set calls waiting on free. Under mu.
func (w *optionWriter) wakeLocked() {
	if w.free != nil {
		close(w.free)
		w.free = nil
	}
}

// set makes value option id: through the writer, once there is one, or,
// when tryTake takes the session for this call (under mu, so no wake is
// missed) and acquire makes it the writer, through this call's own use
// (own: the caller ends it). The record is written and synced (write)
// before the option changes; a value the log records already is not
// written again.
func (w *optionWriter) set(ctx context.Context, id, value string, tryTake func() bool, acquire func() error,
	write func(id, value string) (pendingEvent, error)) (changed, own bool, err error) {
	w.mu.Lock()
	for !w.writer {
		if tryTake() {
			w.mu.Unlock()
			if err := acquire(); err != nil {
				return false, false, err
			}
			own = true
			w.mu.Lock()
			break
		}
		if w.free == nil {
			w.free = make(chan struct{})
		}
		free := w.free
		w.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return false, false, context.Cause(ctx)
		}
		w.mu.Lock()
	}
	defer w.mu.Unlock()
	if *w.opts.field(id) == value {
		return false, own, nil
	}
	p, err := write(id, value)
	if err != nil {
		return false, own, err
	}
	w.written = append(w.written, p)
	*w.opts.field(id) = value
	return true, own, nil
}
