package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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

// Log appends events to one session's file. It is safe for concurrent use.
// Every event is checked against the log's invariants before it is written,
// so a Log never writes a file that Load refuses.
//
// One writer at a time: a Log writes only while it holds the log's lock
// (an exclusive flock, see Lock), so any number of Logs, in this process
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
	path string
	id   string

	mu    sync.Mutex
	f     *os.File
	w     io.Writer // f, or a test's wrapper around it
	check *checker
	// pending holds whole encoded records not yet written.
	pending []byte
	// timer flushes pending at the latest FlushDelay after the first
	// record; armed is true while it is set to fire. Each arming makes a
	// new timer, so no timer is ever reset from another goroutine's bubble.
	timer *time.Timer
	armed bool
	// err is set after a failed write or sync: a partial record may be on
	// disk, so appending more would bury it mid-file. Reopening repairs it.
	// It is always a *WriteError.
	err error
	// dirty is set when something was written since the last sync.
	dirty bool

	// fi is the file f is open on: the log at path may have been replaced
	// or removed since.
	fi os.FileInfo
	// locked is set while f holds the log's lock: only then are records
	// appended.
	locked bool
	// size is how much of the file this Log has read or written (whole
	// lines), lines how many lines that is, and tail its last bytes (up to
	// tailCheck). The next read goes on at size if the file still ends
	// there with tail; otherwise it was changed, and is read again whole.
	size  int64
	lines int
	tail  []byte

	// The shown journal (shown.go), opened by the first WriteShown; wrap
	// is WrapWriter's, applied to it too.
	shown     *os.File
	shownW    io.Writer
	shownBuf  []byte
	shownSize int64
	wrap      func(io.Writer) io.Writer
}

// tailCheck is how many of the last bytes read or written are compared
// with the file before reading on after them: enough to hold the end of
// the last record, with its seq-dependent data and time.
const tailCheck = 256

func newLog(path, id string, f *os.File, fi os.FileInfo) *Log {
	return &Log{path: path, id: id, f: f, w: f, fi: fi, check: newChecker(path)}
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
	if err := lockFile(f); err != nil {
		return fail(lockError(sessionID, path, f, err))
	}
	fi, err := f.Stat()
	if err != nil {
		return fail(&WriteError{Op: "create", Path: path, Err: err})
	}
	l := newLog(path, sessionID, f, fi)
	l.locked = true
	if _, err := l.AppendSync(TypeSessionStart, start); err != nil {
		return fail(err)
	}
	// The new directory entry must survive a crash too.
	if err := syncDir(dir); err != nil {
		return fail(&WriteError{Op: "create", Path: path, Err: err})
	}
	return l, nil
}

func syncDir(dir string) error {
	d, err := regfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
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
	if err := lockFile(l.f); err != nil {
		err = lockError(sessionID, l.path, l.f, err)
		l.f.Close()
		return nil, nil, err
	}
	l.locked = true
	ld, err := l.catchUp()
	if err != nil {
		l.f.Close()
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
		if err = lockFile(l.f); err != nil {
			l.f.Close()
			return nil, nil, lockError(l.id, l.path, l.f, err)
		}
		l.locked = true
		ld, err = l.catchUp()
		if uerr := l.unlock(); err == nil {
			err = uerr
		}
	}
	if err != nil {
		l.f.Close()
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	return l, ld, nil
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

func lockError(sessionID, path string, f *os.File, err error) error {
	if errors.Is(err, errLockHeld) {
		return &LockedError{SessionID: sessionID, Path: path, PID: lockHolder(f)}
	}
	return fmt.Errorf("lock session log %s: %w", path, err)
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
	if err := l.usable("lock"); err != nil {
		return nil, err
	}
	took := !l.locked
	if took {
		if err := lockFile(l.f); err != nil {
			return nil, lockError(l.id, l.path, l.f, err)
		}
		l.locked = true
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
	if err := l.usable("read"); err != nil {
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
	if l.f == nil || !l.locked {
		return nil
	}
	err := l.sync()
	if uerr := l.unlock(); uerr != nil {
		err = errors.Join(err, fmt.Errorf("unlock %s: %w", l.path, uerr))
	}
	return err
}

func (l *Log) unlock() error {
	// The shown journal is written only under the lock: the next holder
	// opens its file again, so one this Log kept open is never written
	// after another process removed it. An empty one is removed now.
	err := l.closeShown(true)
	l.locked = false
	return errors.Join(err, unlockFile(l.f))
}

// closeShown closes the shown journal; remove (only while the lock is
// held) deletes it too when it is empty, so a session whose replies were
// all committed leaves no file beside its log.
func (l *Log) closeShown(remove bool) error {
	if l.shown == nil {
		return nil
	}
	err := l.shown.Close()
	if remove && l.locked && l.shownSize == 0 {
		if rerr := os.Remove(ShownPath(l.path)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	l.shown, l.shownW, l.shownSize = nil, nil, 0
	return err
}

// Locked reports whether the Log holds the log's lock.
func (l *Log) Locked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.locked
}

// catchUp reads the file from where this Log left it, or whole when it
// changed otherwise than by appends, and repairs a torn tail when the lock
// is held. Under l.mu.
func (l *Log) catchUp() (*Loaded, error) {
	pfi, err := os.Stat(l.path)
	if err != nil {
		// Removed (session/delete, perhaps in another process): appending
		// to the unlinked file would lose everything.
		return nil, openError(err)
	}
	if !os.SameFile(pfi, l.fi) {
		if err := l.reopen(); err != nil {
			return nil, err
		}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", l.path, err)
	}
	if l.size > 0 && (fi.Size() < l.size || !l.tailMatches()) {
		l.restart()
	}
	ld := &Loaded{Tail: l.size > 0, ValidSize: l.size}
	whole := l.size == 0
	if fi.Size() > l.size {
		r := io.NewSectionReader(l.f, l.size, fi.Size()-l.size)
		n, err := scan(r, l.path, l.check, l.lines+1, true, l.locked, ld)
		if err != nil && ld.Tail {
			// What follows does not continue what this Log read: the file
			// was changed under it. Read it all again.
			l.restart()
			return l.catchUp()
		}
		if err != nil {
			l.restart()
			return nil, err
		}
		l.lines += n
	}
	if err := finish(ld, l.check, l.path, l.locked); err != nil {
		l.restart()
		return nil, err
	}
	if whole {
		if err := l.ownLog(ld); err != nil {
			l.restart()
			return nil, err
		}
	}
	if l.locked {
		if err := repair(l.f, ld); err != nil {
			l.restart()
			return nil, &WriteError{Op: "repair", Path: l.path, Err: err}
		}
	}
	if ld.ValidSize != l.size {
		l.size = ld.ValidSize
		if l.tail, err = readTail(l.f, l.size); err != nil {
			l.restart()
			return nil, fmt.Errorf("read %s: %w", l.path, err)
		}
	}
	return ld, nil
}

// ownLog refuses a log that begins another session's (a copy, or a second
// name, of its log): this session's records would go into that session's
// file, or its history be taken for this one's.
func (l *Log) ownLog(ld *Loaded) error {
	if len(ld.Events) == 0 || ld.Events[0].Type != TypeSessionStart {
		return nil // the checker holds the log to its first record
	}
	var d SessionStart
	if err := Unmarshal(ld.Events[0].Data, &d); err != nil {
		return fmt.Errorf("read %s: %w", l.path, err)
	}
	if d.SessionID != l.id {
		return fmt.Errorf("%s is the log of session %s, not of %s (a copy or a link of another session's log): Rebound neither reads it as %s's nor writes it", l.path, d.SessionID, l.id, l.id)
	}
	return nil
}

// restart forgets what was read, so the next read takes the whole file.
func (l *Log) restart() {
	l.size, l.lines, l.tail, l.check = 0, 0, nil, newChecker(l.path)
}

// reopen opens the file now at path in place of the one f was open on
// (which was replaced), locked if the Log holds the lock, and reads it
// from the start next.
func (l *Log) reopen() error {
	f, err := regfile.OpenFile(l.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open session log: %w", openError(err))
	}
	if l.locked {
		if err := lockFile(f); err != nil {
			err = lockError(l.id, l.path, f, err)
			f.Close()
			return err
		}
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open session log: %w", err)
	}
	l.f.Close()
	l.f, l.w, l.fi = f, f, fi
	l.restart()
	return nil
}

// tailMatches reports whether the file still holds, just before l.size,
// the bytes this Log last read or wrote there.
func (l *Log) tailMatches() bool {
	b, err := readTail(l.f, l.size)
	return err == nil && bytes.Equal(b, l.tail)
}

// readTail reads the last tailCheck (or fewer) bytes before size.
func readTail(f *os.File, size int64) ([]byte, error) {
	n := min(size, tailCheck)
	b := make([]byte, n)
	_, err := f.ReadAt(b, size-n)
	return b, err
}

// keepTail is the last tailCheck bytes of t followed by b.
func keepTail(t, b []byte) []byte {
	if len(b) >= tailCheck {
		return append(t[:0], b[len(b)-tailCheck:]...)
	}
	if over := len(t) + len(b) - tailCheck; over > 0 {
		t = t[over:]
	}
	return append(t, b...)
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
func (l *Log) Path() string { return l.path }

// SessionID is the session the log belongs to.
func (l *Log) SessionID() string { return l.id }

// WrapWriter makes l write its file through wrap(w), where w is what it
// wrote through so far: a seam for fault injection (a test's full disk).
// The wrapper lasts as long as this Log; opening the log again writes to
// the file directly.
func (l *Log) WrapWriter(wrap func(w io.Writer) io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = wrap(l.w)
	prev := l.wrap
	l.wrap = func(w io.Writer) io.Writer {
		if prev != nil {
			w = prev(w)
		}
		return wrap(w)
	}
	if l.shownW != nil {
		l.shownW = wrap(l.shownW)
	}
}

// Err returns the *WriteError that broke the log, if a write or sync failed:
// every later call fails with it until the log is closed and opened again,
// which repairs the file. It is nil for a log that is writing fine.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
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
	if len(l.pending) > FlushSize {
		if err := l.flush(); err != nil {
			return Event{}, fmt.Errorf("append %s: %w", typ, err)
		}
		return ev, nil
	}
	if !l.armed {
		l.armed = true
		l.timer = time.AfterFunc(FlushDelay, l.onTimer)
	}
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

// append checks and encodes one event into pending.
func (l *Log) append(typ string, data any) (Event, error) {
	if l.f == nil {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, ErrClosed)
	}
	if l.err != nil {
		return Event{}, fmt.Errorf("append %s to %s: an earlier write failed: %w", typ, l.path, l.err)
	}
	if !l.locked {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, ErrNotLocked)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, err)
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
	pending, err := appendRecord(l.pending, ev)
	if err != nil {
		// Unreachable: ev holds only marshalable values. Poison the log
		// anyway, since the checker already counted the event.
		l.err = err
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, err)
	}
	l.pending = pending
	return ev, nil
}

// appendRecord appends ev's line, '\n' included, to dst: the bytes of
// json.Marshal(ev) and a newline, written out without reflection because
// Append runs for every streamed chunk. ev.Data must be the output of
// json.Marshal (compact, HTML-escaped). An event whose type or time would
// be escaped or formatted otherwise goes through json.Marshal. On error dst
// is returned unchanged.
func appendRecord(dst []byte, ev Event) ([]byte, error) {
	if !plainJSONString(ev.Type) || ev.Time.Location() != time.UTC || ev.Time.Year() < 0 || ev.Time.Year() > 9999 {
		line, err := json.Marshal(ev)
		if err != nil {
			return dst, err
		}
		return append(append(dst, line...), '\n'), nil
	}
	b := append(dst, `{"seq":`...)
	b = strconv.AppendInt(b, ev.Seq, 10)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, int64(ev.V), 10)
	b = append(b, `,"time":"`...)
	b = ev.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","type":"`...)
	b = append(b, ev.Type...)
	b = append(b, `","data":`...)
	b = append(b, ev.Data...)
	return append(b, "}\n"...), nil
}

// plainJSONString reports whether s is encoded by encoding/json as itself
// between quotes: printable ASCII without '"', '\\' or the HTML-escaped
// '<', '>' and '&'. Event types are.
func plainJSONString(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// onTimer writes what is pending FlushDelay after the first record. A
// failure is kept in l.err for the next call to report.
func (l *Log) onTimer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	if l.f == nil || l.err != nil {
		return
	}
	l.flush()
}

// flush writes everything pending with one Write: a crash leaves at most
// one torn line, at the end.
func (l *Log) flush() error {
	if len(l.pending) == 0 {
		return nil
	}
	_, err := l.w.Write(l.pending)
	l.dirty = true
	if err != nil {
		l.pending = l.pending[:0]
		l.err = &WriteError{Op: "write", Path: l.path, Err: err}
		return l.err
	}
	// The file now ends with what was written: the next Lock reads on
	// from there.
	l.size += int64(len(l.pending))
	l.lines += bytes.Count(l.pending, []byte{'\n'})
	l.tail = keepTail(l.tail, l.pending)
	l.pending = l.pending[:0]
	return nil
}

// usable says why the log can't be written, if it can't.
func (l *Log) usable(op string) error {
	if l.f == nil {
		return fmt.Errorf("%s %s: %w", op, l.path, ErrClosed)
	}
	if l.err != nil {
		return fmt.Errorf("%s %s: an earlier write failed: %w", op, l.path, l.err)
	}
	return nil
}

// Flush writes the appended events to the file, all in one Write, without
// syncing. Other readers of the file see them from then on.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable("flush"); err != nil {
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
	if err := l.usable("sync"); err != nil {
		return err
	}
	if err := l.flush(); err != nil {
		return err
	}
	if !l.dirty {
		return nil // nothing written since the last sync
	}
	if err := l.f.Sync(); err != nil {
		l.err = &WriteError{Op: "sync", Path: l.path, Err: err}
		return l.err
	}
	l.dirty = false
	return nil
}

// Close writes what is pending, syncs and closes the file, and stops the
// flush timer. If a write failed earlier, it says so. Closing a closed Log
// does nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if l.armed {
		l.timer.Stop()
		l.armed = false
	}
	err := l.sync()
	err = errors.Join(err, l.closeShown(true))
	err = errors.Join(err, l.f.Close())
	l.f, l.locked = nil, false
	l.pending = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
