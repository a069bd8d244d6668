package session

import "time"

// Bounds on what an appended record may wait in memory before it is
// written to the file: a process killed with SIGKILL loses at most the
// appends of the last FlushDelay (the OS keeps what was written; only an OS
// crash loses unsynced data, and Sync covers that).
const (
	// FlushDelay is the longest time from an Append to the write of its
	// record.
	FlushDelay = 100 * time.Millisecond
	// FlushSize is how much may be pending: an Append that makes more
	// pending writes it all at once.
	FlushSize = 64 << 10
)

// batch holds encoded records until they are written, all in one Write,
// and the timer that bounds how long they wait (FlushDelay). It does not
// write: its owner does, under its own lock, when full says so or the
// timer fires.
type batch struct {
	// pending holds whole encoded records not yet written.
	pending []byte
	// timer fires at the latest FlushDelay after the first record; armed
	// is true while it is set to fire. Each arming makes a new timer, so no
	// timer is ever reset from another goroutine's synctest bubble.
	timer *time.Timer
	armed bool
	// fire is what the timer runs: the owner's flush. Set once, so arming
	// allocates no closure per record.
	fire func()
}

// full reports whether more than FlushSize is pending: then the owner
// writes it now.
func (b *batch) full() bool { return len(b.pending) > FlushSize }

// arm makes fire run FlushDelay from now, unless it is already due to run.
func (b *batch) arm() {
	if !b.armed {
		b.armed = true
		b.timer = time.AfterFunc(FlushDelay, b.fire)
	}
}

// fired notes that the timer ran: the next record arms it again.
func (b *batch) fired() { b.armed = false }

// stop stops the timer, if it is armed.
func (b *batch) stop() {
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
}

// taken empties pending once it was written (or failed to be), keeping
// its memory for the next records.
func (b *batch) taken() { b.pending = b.pending[:0] }
