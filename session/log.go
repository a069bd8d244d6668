package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rebound-agent/rebound/internal/regfile"
)

var (
	// ErrNotFound is wrapped (together with fs.ErrNotExist) by Open and Load
	// when the session has no log.
	ErrNotFound = errors.New("session not found")
	// ErrClosed is returned by a Log's methods after Close.
	ErrClosed = errors.New("session log is closed")
)

const maxIDLen = 128

// CheckSessionID reports whether id can name a log file: 1 to 128 letters,
// digits, '-' or '_'. Anything else could leave the sessions directory.
func CheckSessionID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("invalid session id %q: want 1 to %d characters", id, maxIDLen)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_'
		if !ok {
			return fmt.Errorf("invalid session id %q: only letters, digits, '-' and '_' are allowed", id)
		}
	}
	return nil
}

// Path is where the log of a session lives. It does not check sessionID;
// Create and Open do.
func Path(stateDir, sessionID string) string {
	return filepath.Join(stateDir, "sessions", sessionID+".jsonl")
}

// Log appends events to one session's file. It is safe for concurrent use.
// Every event is checked against the log's invariants before it is written,
// so a Log never writes a file that Load refuses.
//
// One writer at a time: a Log writes only while it holds the log's lock
// (an exclusive file lock, see Lock), so any number of Logs, in this process
// or others, may have one session's log open and take turns writing it.
// Lock reads what the others appended meanwhile before it lets this one
// append after it; Unlock writes and syncs everything first.
//
// Append buffers: records are written to the file, all pending ones in one
// Write, by Flush, by Sync and AppendSync (the durability points), when more
// than FlushSize bytes are pending, and at the latest FlushDelay after the
// first unwritten record. Readers of the file see written records only.
//
// The flush timer is armed by Append and stopped by Close. A Log appended
// to inside a testing/synctest bubble must be closed inside it (stopping a
// bubble's timer from outside is fatal); its timer then runs on the
// bubble's fake clock.
type Log struct {
	mu sync.Mutex
	// file is the open file: its lock, its writer, its sync policy.
	file logFile
	// check holds the invariants of what was read or appended so far, the
	// next seq among them; at is how far the file was read or written.
	check *checker
	at    cursor
	// batch holds appended records until they are written.
	batch batch
	shown shownJournal
}

func newLog(path, id string, f *os.File, fi os.FileInfo) *Log {
	l := &Log{file: newLogFile(path, id, f, fi), check: newChecker(path), shown: shownJournal{path: ShownPath(path)}}
	l.batch.fire = l.onTimer
	return l
}

// Create starts the log of a new session, which must not exist yet, and
// writes and syncs its session/start. The new log is locked for writing
// (see Open). A failure leaves no file behind; a failure to write is a
// *WriteError.
func Create(stateDir, sessionID string, start SessionStart) (*Log, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	path := Path(stateDir, sessionID)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, &WriteError{Op: "create", Path: path, Err: err}
	}
	f, err := regfile.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDWR|os.O_APPEND, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	if err != nil {
		return nil, &WriteError{Op: "create", Path: path, Err: err}
	}
	fail := func(err error) (*Log, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(&WriteError{Op: "create", Path: path, Err: err})
	}
	l := newLog(path, sessionID, f, fi)
	if err := l.file.lock(); err != nil {
		return fail(err)
	}
	if _, err := l.AppendSync(TypeSessionStart, start); err != nil {
		return fail(err)
	}
	// The new directory entry must survive a crash too.
	if err := syncDir(dir); err != nil {
		return fail(&WriteError{Op: "create", Path: path, Err: err})
	}
	return l, nil
}

// Open loads an existing session's log, repairs its tail (drops a torn last
// line, terminates a complete one) and reopens it for appending after the
// last event. The error wraps ErrNotFound if there is no log. Unlike
// Load, it joins each run of chunks of one step, message and kind into one
// event (see Event.Through): the caller keeps the events while the session
// is open.
//
// The Log it returns holds the log's lock (see Lock): while it does, a
// second Open of the same session, in this process or another, fails with
// a *LockedError (ErrLocked) instead of interleaving its records with the
// first one's. Unlock lets go of it; so do Close and the death of the
// process.
func Open(stateDir, sessionID string) (*Log, *Loaded, error) {
	l, err := openLog(stateDir, sessionID)
	if err != nil {
		return nil, nil, err
	}
	// Locked before reading: what is checked can't change under us.
	if err := l.file.lock(); err != nil {
		l.file.close()
		return nil, nil, err
	}
	ld, err := l.catchUp()
	if err != nil {
		l.file.close()
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	return l, ld, nil
}

// OpenShared opens an existing session's log without its lock, as Open
// does otherwise, and reads its whole lines: another Log may be writing
// it. Nothing is repaired; an unterminated last line is left for Lock (or
// a later Refresh) to read, unless it is the only line: then OpenShared
// waits for the lock and reads it as Lock does. The Log appends nothing until Lock.
func OpenShared(stateDir, sessionID string) (*Log, *Loaded, error) {
	l, err := openLog(stateDir, sessionID)
	if err != nil {
		return nil, nil, err
	}
	ld, err := l.catchUp()
	if errors.Is(err, errHeldBack) {
		// Nothing but a line without its newline: wait for any writer, then
		// read it settled (and repaired) as Lock does.
		if err = l.file.lock(); err != nil {
			l.file.close()
			return nil, nil, err
		}
		ld, err = l.catchUp()
		if uerr := l.unlock(); err == nil {
			err = uerr
		}
	}
	if err != nil {
		l.file.close()
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	return l, ld, nil
}

// LoadSession reads session sessionID's log in stateDir without its lock
// and changes nothing, found as Open and OpenShared find it, with the same
// refusals in the same words: only a regular file at the session's own
// path, not through a link, that begins this session's log. As Load does,
// it returns every line (chunks not joined): for a copy of the log.
func LoadSession(stateDir, sessionID string) (*Loaded, error) {
	l, err := openLog(stateDir, sessionID)
	if err != nil {
		return nil, err
	}
	defer l.file.close()
	ld, err := Parse(l.file.f, l.file.path)
	if err == nil {
		err = ownLog(ld, l.file.path, sessionID)
	}
	if err != nil {
		return nil, fmt.Errorf("open session log: %w", err)
	}
	return ld, nil
}

// openLog opens the session's file, not locked and not read yet.
func openLog(stateDir, sessionID string) (*Log, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("open session log: %w", err)
	}
	path := Path(stateDir, sessionID)
	// One descriptor for reading and appending: what is checked is what is
	// repaired and appended to. Only a regular file with one name: a FIFO
	// would block, a link would take this session's records elsewhere.
	f, err := regfile.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open session log: %w", openError(err))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open session log: %w", err)
	}
	return newLog(path, sessionID, f, fi), nil
}

// Lock takes the log's lock, without waiting: a *LockedError (ErrLocked)
// says another Log, most likely in another Rebound process, is writing the
// log now. Then it reads what others appended since this Log last read or
// wrote the file, and returns it (Loaded.Tail); a file that changed
// otherwise (replaced, truncated, rewritten) is read again whole. A torn
// tail left by a writer that died is repaired, as Open does. A removed log
// is ErrNotFound. Until Unlock, nobody else writes the log, and this Log
// may append to it. Locking a locked Log only reads again.
func (l *Log) Lock() (*Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.file.usable("lock"); err != nil {
		return nil, err
	}
	took := !l.file.locked
	if took {
		if err := l.file.lock(); err != nil {
			return nil, err
		}
	}
	ld, err := l.catchUp()
	if err != nil {
		if took {
			l.unlock()
		}
		return nil, err
	}
	return ld, nil
}

// Refresh reads what others appended since this Log last read or wrote the
// file, as Lock does, but without the lock: only whole lines, since a
// writer may be in the middle of one, and nothing is repaired. A Log that
// holds the lock has nothing to read.
func (l *Log) Refresh() (*Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.file.usable("read"); err != nil {
		return nil, err
	}
	return l.catchUp()
}

// Unlock writes and syncs what is pending, then lets go of the lock, so
// another Log may write the log. The lock is let go of even if the write
// fails: the torn tail it may leave is repaired by the next Lock. Unlocking
// a Log that does not hold the lock does nothing.
func (l *Log) Unlock() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file.closed() || !l.file.locked {
		return nil
	}
	err := l.sync()
	if uerr := l.unlock(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unlock %s: %w", l.file.path, uerr))
	}
	return err
}

func (l *Log) unlock() error {
	// The shown journal is written only under the lock: the next holder
	// opens its file again, so one this Log kept open is never written
	// after another process removed it. An empty one is removed now.
	err := l.shown.close(l.file.locked)
	return errors.Join(err, l.file.unlock())
}

// Locked reports whether the Log holds the log's lock.
func (l *Log) Locked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file.locked
}

// catchUp reads the file from where this Log left it, or whole when it
// changed otherwise than by appends, and repairs a torn tail when the lock
// is held. Under l.mu.
func (l *Log) catchUp() (*Loaded, error) {
	replaced, err := l.file.replaced()
	if err != nil {
		return nil, err
	}
	if replaced {
		if err := l.file.reopen(); err != nil {
			return nil, err
		}
		l.restart()
	}
	fi, err := l.file.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.file.path, err)
	}
	ld, err := l.readOn(fi.Size())
	if err != nil {
		l.restart()
		return nil, err
	}
	return ld, nil
}

// readOn reads what follows the cursor in the file, now size bytes long,
// checks it, repairs a torn tail when the lock is held, and moves the
// cursor past it. On error the caller forgets what was read.
func (l *Log) readOn(size int64) (*Loaded, error) {
	path, f := l.file.path, l.file.f
	if !l.at.continues(f, size) {
		l.restart()
	}
	ld := &Loaded{Tail: l.at.size > 0, ValidSize: l.at.size}
	whole := l.at.size == 0
	n := 0
	if size > l.at.size {
		var err error
		r := io.NewSectionReader(f, l.at.size, size-l.at.size)
		n, err = scan(r, path, l.check, l.at.lines+1, true, l.file.locked, ld)
		if err != nil && ld.Tail {
			// What follows does not continue what this Log read: the file
			// was changed under it. Read it all again.
			l.restart()
			return l.catchUp()
		}
		if err != nil {
			return nil, err
		}
	}
	if err := finish(ld, l.check, path, l.file.locked); err != nil {
		return nil, err
	}
	if whole {
		if err := ownLog(ld, path, l.file.id); err != nil {
			return nil, err
		}
	}
	if l.file.locked {
		if err := repair(f, ld); err != nil {
			return nil, &WriteError{Op: "repair", Path: path, Err: err}
		}
	}
	if err := l.at.readTo(f, ld.ValidSize, n); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ld, nil
}

// ownLog refuses a log that begins another session's (a copy, or a second
// name, of its log): this session's records would go into that session's
// file, or its history be taken for this one's.
func ownLog(ld *Loaded, path, id string) error {
	if len(ld.Events) == 0 || ld.Events[0].Type != TypeSessionStart {
		return nil // the checker holds the log to its first record
	}
	var d SessionStart
	if err := Unmarshal(ld.Events[0].Data, &d); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if d.SessionID != id {
		return fmt.Errorf("%s is the log of session %s, not of %s (a copy or a link of another session's log): Rebound neither reads it as %s's nor writes it", path, d.SessionID, id, id)
	}
	return nil
}

// restart forgets what was read, so the next read takes the whole file.
func (l *Log) restart() {
	l.at.reset()
	l.check = newChecker(l.file.path)
}

// Remove deletes a session's log. It takes the log's lock first, so it
// refuses with a *LockedError while a Log is writing the log, in this
// process or another. Logs that have it open without writing find it gone
// at their next Lock or Refresh (ErrNotFound). The error wraps ErrNotFound if there is
// no log; a failure to delete it is a *WriteError.
func Remove(stateDir, sessionID string) error {
	if err := CheckSessionID(sessionID); err != nil {
		return fmt.Errorf("remove session log: %w", err)
	}
	path := Path(stateDir, sessionID)
	f, err := regfile.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("remove session log: %w", openError(err))
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return lockError(sessionID, path, f, err)
	}
	if err := os.Remove(path); err != nil {
		return &WriteError{Op: "delete", Path: path, Err: err}
	}
	if err := os.Remove(ShownPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &WriteError{Op: "delete", Path: ShownPath(path), Err: err}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return &WriteError{Op: "delete", Path: path, Err: err}
	}
	return nil
}

func repair(f *os.File, ld *Loaded) error {
	switch {
	case ld.TornBytes > 0:
		if err := f.Truncate(ld.ValidSize); err != nil {
			return err
		}
		ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s: truncated to %d bytes, dropping %d torn bytes", f.Name(), ld.ValidSize, ld.TornBytes))
	case ld.Unterminated:
		if _, err := f.Write([]byte{'\n'}); err != nil {
			return err
		}
		ld.ValidSize++
		ld.Warnings = append(ld.Warnings, fmt.Sprintf("%s: appended the missing newline of the last line", f.Name()))
	default:
		return nil
	}
	return f.Sync()
}

// Path is the file the log writes.
func (l *Log) Path() string { return l.file.path }

// SessionID is the session the log belongs to.
func (l *Log) SessionID() string { return l.file.id }

// WrapWriter makes l write its file through wrap(w), where w is what it
// wrote through so far: a seam for fault injection (a test's full disk).
// The wrapper lasts as long as this Log; opening the log again writes to
// the file directly.
func (l *Log) WrapWriter(wrap func(w io.Writer) io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file.w = wrap(l.file.w)
	l.shown.wrapWith(wrap)
}

// Err returns the *WriteError that broke the log, if a write or sync failed:
// every later call fails with it until the log is closed and opened again,
// which repairs the file. It is nil for a log that is writing fine.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.file.err
}

// Append adds one event with the next seq and the current time. The record
// is checked and encoded now and written to the file within FlushDelay; it
// is not synced. See Flush, Sync and AppendSync.
//
// The error of a write that happens later, on the timer, is kept: the next
// call returns it.
func (l *Log) Append(typ string, data any) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev, err := l.append(typ, data)
	if err != nil {
		return Event{}, err
	}
	if l.batch.full() {
		if err := l.flush(); err != nil {
			return Event{}, fmt.Errorf("append %s: %w", typ, err)
		}
		return ev, nil
	}
	l.batch.arm()
	return ev, nil
}

// AppendSync appends, writes everything pending and syncs the file, for
// records that must be on disk before the agent waits or reports a commit.
func (l *Log) AppendSync(typ string, data any) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev, err := l.append(typ, data)
	if err != nil {
		return Event{}, err
	}
	if err := l.sync(); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// append checks and encodes one event into the batch.
func (l *Log) append(typ string, data any) (Event, error) {
	if l.file.closed() || l.file.err != nil {
		return Event{}, l.file.usable("append " + typ + " to")
	}
	if !l.file.locked {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.file.path, ErrNotLocked)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.file.path, err)
	}
	ev := Event{Seq: l.check.lastSeq + 1, V: SchemaVersion, Time: time.Now().UTC(), Type: typ, Data: b}
	// The checker may use data as it is instead of decoding what was just
	// encoded from it: the same values, without a second JSON pass.
	l.check.typed = data
	err = l.check.check(ev)
	l.check.typed = nil
	if err != nil {
		return Event{}, fmt.Errorf("append %s: %w", typ, err)
	}
	pending, err := appendRecord(l.batch.pending, ev)
	if err != nil {
		// Unreachable: ev holds only marshalable values. Poison the log
		// anyway, since the checker already counted the event.
		l.file.err = err
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.file.path, err)
	}
	l.batch.pending = pending
	return ev, nil
}

// onTimer writes what is pending FlushDelay after the first record. A
// failure is kept in l.file.err for the next call to report.
func (l *Log) onTimer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batch.fired()
	if l.file.closed() || l.file.err != nil {
		return
	}
	l.flush()
}

// flush writes everything pending with one Write: a crash leaves at most
// one torn line, at the end.
func (l *Log) flush() error {
	b := l.batch.pending
	if len(b) == 0 {
		return nil
	}
	err := l.file.write(b)
	if err == nil {
		// The file now ends with what was written: the next Lock reads
		// on from there.
		l.at.wrote(b)
	}
	l.batch.taken()
	return err
}

// Flush writes the appended events to the file, all in one Write, without
// syncing. Other readers of the file see them from then on.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.file.usable("flush"); err != nil {
		return err
	}
	return l.flush()
}

// Sync writes the appended events to the file and flushes them to stable
// storage.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sync()
}

func (l *Log) sync() error {
	if err := l.file.usable("sync"); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return err
	}
	return l.file.sync()
}

// Close writes what is pending, syncs and closes the file, and stops the
// flush timer. If a write failed earlier, it says so. Closing a closed Log
// does nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file.closed() {
		return nil
	}
	l.batch.stop()
	err := l.sync()
	err = errors.Join(err, l.shown.close(l.file.locked))
	err = errors.Join(err, l.file.close())
	l.batch.pending = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.file.path, err)
	}
	return nil
}
