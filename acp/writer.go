package acp

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// maxPending is how much output may wait for the writer: when it is reached
// (the reader is slow), a write waits for the writer to take it.
const maxPending = 4 << 20

// maxSpare is the largest buffer kept for reuse once written.
const maxSpare = 256 << 10

// lineWriter is a LineStream's output and its flush policy. write writes an
// idle stream's line itself when writeNow can; otherwise it appends the
// line to pending and, unless one is running, starts the writer goroutine,
// which writes everything pending with one Write and loops until nothing
// is; lines written while it writes go out together in its next Write.
// Everything below out and writeNow is guarded by mu; cond is signalled
// when the writer takes pending, ends a Write or stops.
type lineWriter struct {
	out io.Writer
	// writeNow, when set, writes a line at once if the output takes it
	// without blocking: write then writes an idle stream's line itself.
	writeNow func(p []byte) (bool, error)

	mu      sync.Mutex
	cond    sync.Cond
	pending []byte // lines not yet taken by the writer
	spare   []byte // the writer's last buffer, for reuse as pending
	writing bool   // the writer goroutine runs, or a write writes its line
	queued  uint64 // lines appended to pending so far
	written uint64 // lines whose Write has returned
	werr    error  // the first write error; every later write fails with it
	// syncWrites is set when the input ends: the connection is closing, so
	// write returns only once its line is written. Whoever waits for the
	// last writers (Server's shutdown) then knows their lines are out.
	syncWrites bool
	closed     bool
}

func newLineWriter(out io.Writer, writeNow func(p []byte) (bool, error)) *lineWriter {
	w := &lineWriter{out: out, writeNow: writeNow}
	w.cond.L = &w.mu
	return w
}

// write queues line, a whole message ending in '\n' (see
// LineStream.WriteObject for the policy); line is copied before it returns.
func (w *lineWriter) write(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && len(w.pending)+len(line) > maxPending && w.werr == nil && !w.closed {
		w.cond.Wait()
	}
	switch {
	case w.werr != nil:
		return w.werr
	case w.closed:
		return errStreamClosed
	}
	if !w.writing && len(w.pending) == 0 && w.writeNow != nil {
		return w.writeIdle(line)
	}
	w.pending = append(w.pending, line...)
	w.queued++
	if !w.writing {
		w.writing = true
		go w.writeLoop()
	}
	return w.waitWritten(w.queued)
}

// writeIdle writes line, with w.mu held and nothing pending or being
// written, from the caller's goroutine if the output takes it without
// blocking, and otherwise queues it for the writer goroutine. Lines
// queued meanwhile come after it: the writing flag holds them back.
func (w *lineWriter) writeIdle(line []byte) error {
	w.queued++
	n := w.queued
	w.writing = true
	w.mu.Unlock()
	wrote, err := w.writeNow(line)
	w.mu.Lock()
	if !wrote {
		// It would block (the reader is slow): the writer goroutine
		// waits for it, ahead of what was queued meanwhile.
		w.pending = slices.Insert(w.pending, 0, line...)
		go w.writeLoop()
		return w.waitWritten(n)
	}
	w.written = n
	if err != nil {
		w.werr = err
		w.pending = nil
	}
	if len(w.pending) > 0 && w.werr == nil {
		go w.writeLoop()
	} else {
		w.writing = false
	}
	w.cond.Broadcast()
	if w.syncWrites {
		return w.werr
	}
	return nil
}

// waitWritten, with w.mu held, waits for line n to be written once the
// input has ended (see ReadObject); before that it returns at once.
func (w *lineWriter) waitWritten(n uint64) error {
	if !w.syncWrites {
		return nil
	}
	for w.written < n && w.werr == nil && !w.closed {
		w.cond.Wait()
	}
	if w.written < n && w.werr == nil {
		return errStreamClosed // Close gave up on the output
	}
	return w.werr
}

// writeLoop writes what is pending until nothing is, then ends.
func (w *lineWriter) writeLoop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 && w.werr == nil {
		out, n := w.pending, w.queued
		w.pending, w.spare = w.spare[:0], nil
		w.cond.Broadcast() // room for writers waiting on maxPending
		w.mu.Unlock()
		_, err := w.out.Write(out)
		w.mu.Lock()
		if err != nil {
			w.werr = err
			w.pending = nil
		}
		w.written = n
		if cap(out) <= maxSpare {
			w.spare = out
		}
		w.cond.Broadcast()
	}
	w.writing = false
	w.cond.Broadcast()
}

// waitWriter waits, with w.mu held, until the writer has written all that
// is pending and ended, or for d. It reports whether the writer ended.
func (w *lineWriter) waitWriter(d time.Duration) bool {
	if !w.writing {
		return true
	}
	expired := false
	t := time.AfterFunc(d, func() {
		w.mu.Lock()
		expired = true
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer t.Stop()
	for w.writing && !expired {
		w.cond.Wait()
	}
	return !w.writing
}

// inputEnded makes every later write wait for its line (syncWrites) and, if
// flush, waits at most flushTimeout for what is pending.
func (w *lineWriter) inputEnded(flush bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.syncWrites = true
	if flush && !w.closed {
		w.waitWriter(flushTimeout)
	}
}

// close stops the writer: writes waiting for room or for their line give
// up, and later ones fail. It waits at most d (none if d <= 0) for what is
// pending to be written, then calls closeOut (which may unblock a Write
// nobody reads), then waits at most closeGrace for the writer goroutine to
// end. It returns the write error, if a Write failed, with closeOut's and
// one saying what was dropped. Only the first close does this; later ones
// return nil at once.
func (w *lineWriter) close(d time.Duration, closeOut func() error) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.cond.Broadcast() // writers waiting for room or for their line give up
	flushed := !w.writing
	if !flushed && d > 0 {
		flushed = w.waitWriter(d)
	}
	w.mu.Unlock()

	err := closeOut()

	w.mu.Lock()
	defer w.mu.Unlock()
	if !flushed && !w.waitWriter(closeGrace) {
		err = errors.Join(err, fmt.Errorf("acp: output not written after %v: nobody reads it (%d bytes dropped, more in a Write that never returned)",
			max(d, 0)+closeGrace, len(w.pending)))
		w.pending = nil
	}
	if w.werr != nil && !errors.Is(err, w.werr) {
		err = errors.Join(fmt.Errorf("acp: write: %w", w.werr), err)
	}
	return err
}
