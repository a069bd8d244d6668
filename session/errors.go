package session

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/rebound-agent/rebound/internal/filelock"
)

// WriteError is a failure to create, write, sync or repair a session log:
// Rebound's own failure (a full disk, a read-only or vanished state
// directory), never the model provider's. A Log that had one refuses every
// later write with it (a partial record may be on disk); Open repairs the
// file and gives a usable Log again.
type WriteError struct {
	Op   string // "create", "write", "sync", "repair" or "delete"
	Path string // the log file
	Err  error
}

func (e *WriteError) Error() string {
	cause := e.Err
	// The path is said once: an *fs.PathError about the log file itself
	// contributes only its cause.
	if pe, ok := errors.AsType[*fs.PathError](cause); ok && pe.Path == e.Path {
		cause = pe.Err
	}
	return fmt.Sprintf("Rebound could not %s its session log %s: %v", e.Op, e.Path, cause)
}

func (e *WriteError) Unwrap() error { return e.Err }

// ErrLocked is matched (errors.Is) by the *LockedError of Create, Open,
// Lock and Remove when another Log is writing the session's log.
var ErrLocked = errors.New("session log is being written elsewhere")

// ErrNotLocked is returned by an append to a Log that does not hold the
// log's lock (see Log.Lock).
var ErrNotLocked = errors.New("the session log is not locked for writing")

// LockedError: another Log holds the session's lock and is writing the
// log, most likely another Rebound process serving another editor window
// and running a turn there. Two writers would interleave their records and
// break the log for good, so a log is only ever written under an exclusive
// advisory lock.
type LockedError struct {
	SessionID string
	Path      string
	// PID is the process holding the lock, when the OS says (Linux); 0
	// otherwise. It may be this process: a lock belongs to an open file,
	// not to a process.
	PID int
}

func (e *LockedError) Error() string {
	pid := ""
	if e.PID > 0 {
		pid = fmt.Sprintf(" (pid %d)", e.PID)
	}
	return fmt.Sprintf("session %s is being written by another Rebound process%s; try again once it has finished there", e.SessionID, pid)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// errLockHeld is lockFile's answer when someone else holds the lock.
var errLockHeld = filelock.ErrHeld
