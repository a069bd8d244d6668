package session

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// logFile is the open file of one session's log and what is true of it:
// the descriptor, the writer records go through, whether it holds the
// log's lock, and the sync policy (something written since the last sync;
// the first failed write or sync breaks it for good). It knows nothing of
// records: Log decides what to write and when.
type logFile struct {
	path string
	id   string // the session's, for a *LockedError

	f  *os.File
	w  io.Writer // f, or a test's wrapper around it
	fi os.FileInfo
	// locked is set while f holds the log's lock: only then are records
	// appended.
	locked bool
	// dirty is set when something was written since the last sync.
	dirty bool
	// err is set after a failed write or sync: a partial record may be on
	// disk, so appending more would bury it mid-file. Reopening repairs it.
	// It is a *WriteError.
	err error
}

func newLogFile(path, id string, f *os.File, fi os.FileInfo) logFile {
	return logFile{path: path, id: id, f: f, w: f, fi: fi}
}

// closed reports whether Close closed the file.
func (lf *logFile) closed() bool { return lf.f == nil }

// usable says why the log can't be written, if it can't.
func (lf *logFile) usable(op string) error {
	if lf.f == nil {
		return fmt.Errorf("%s %s: %w", op, lf.path, ErrClosed)
	}
	if lf.err != nil {
		return fmt.Errorf("%s %s: an earlier write failed: %w", op, lf.path, lf.err)
	}
	return nil
}

// lock takes the log's lock without waiting (lockFile).
func (lf *logFile) lock() error {
	if err := lockFile(lf.f); err != nil {
		return lockError(lf.id, lf.path, lf.f, err)
	}
	lf.locked = true
	return nil
}

// unlock lets go of the lock.
func (lf *logFile) unlock() error {
	lf.locked = false
	return unlockFile(lf.f)
}

// write writes b with one Write. A failure breaks the file.
func (lf *logFile) write(b []byte) error {
	_, err := lf.w.Write(b)
	lf.dirty = true
	if err != nil {
		lf.err = &WriteError{Op: "write", Path: lf.path, Err: err}
		return lf.err
	}
	return nil
}

// sync flushes what was written since the last sync to stable storage, if
// anything was. A failure breaks the file.
func (lf *logFile) sync() error {
	if !lf.dirty {
		return nil
	}
	if err := lf.f.Sync(); err != nil {
		lf.err = &WriteError{Op: "sync", Path: lf.path, Err: err}
		return lf.err
	}
	lf.dirty = false
	return nil
}

// replaced reports whether the file now at path is another than the one f
// is open on. A removed log (session/delete, perhaps in another process)
// is an error: appending to the unlinked file would lose everything.
func (lf *logFile) replaced() (bool, error) {
	pfi, err := os.Stat(lf.path)
	if err != nil {
		return false, openError(err)
	}
	return !os.SameFile(pfi, lf.fi), nil
}

// reopen opens the file now at path in place of the one f was open on
// (which was replaced), locked if this one holds the lock.
func (lf *logFile) reopen() error {
	f, err := regfile.OpenFile(lf.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open session log: %w", openError(err))
	}
	if lf.locked {
		if err := lockFile(f); err != nil {
			err = lockError(lf.id, lf.path, f, err)
			f.Close()
			return err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open session log: %w", err)
	}
	lf.f.Close()
	lf.f, lf.w, lf.fi = f, f, fi
	return nil
}

// close closes the file, which lets go of the lock too.
func (lf *logFile) close() error {
	err := lf.f.Close()
	lf.f, lf.locked = nil, false
	return err
}

func lockError(sessionID, path string, f *os.File, err error) error {
	if errors.Is(err, errLockHeld) {
		return &LockedError{SessionID: sessionID, Path: path, PID: lockHolder(f)}
	}
	return fmt.Errorf("lock session log %s: %w", path, err)
}
