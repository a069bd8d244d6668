package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
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
type Log struct {
	path string
	id   string

	mu    sync.Mutex
	f     *os.File
	check *checker
	// err is set after a failed write or sync: a partial record may be on
	// disk, so appending more would bury it mid-file. Reopening repairs it.
	err error
}

// Create starts the log of a new session, which must not exist yet, and
// writes and syncs its session/start.
func Create(stateDir, sessionID string, start SessionStart) (*Log, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	path := Path(stateDir, sessionID)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create session log: %w", err)
	}
	l := &Log{path: path, id: sessionID, f: f, check: newChecker(path)}
	if _, err := l.AppendSync(TypeSessionStart, start); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("create session log: %w", err)
	}
	// The new directory entry must survive a crash too.
	if err := syncDir(dir); err != nil {
		l.Close()
		return nil, fmt.Errorf("create session log: %w", err)
	}
	return l, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Open loads an existing session's log, repairs its tail (drops a torn last
// line, terminates a complete one) and reopens it for appending after the
// last event. The error wraps ErrNotFound if there is no log.
func Open(stateDir, sessionID string) (*Log, *Loaded, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	path := Path(stateDir, sessionID)
	// One descriptor for reading and appending: what is checked is what is
	// repaired and appended to.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open session log: %w", openError(err))
	}
	ld, c, err := parse(f, path)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open session log: %w", err)
	}
	if err := repair(f, ld); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open session log: repair %s: %w", path, err)
	}
	return &Log{path: path, id: sessionID, f: f, check: c}, ld, nil
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

// Append writes one event with the next seq and the current time. It does
// not sync; see AppendSync.
func (l *Log) Append(typ string, data any) (Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.append(typ, data)
}

// AppendSync appends and then syncs the file, for records that must be on
// disk before the agent waits or reports a commit.
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

func (l *Log) append(typ string, data any) (Event, error) {
	if l.f == nil {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, ErrClosed)
	}
	if l.err != nil {
		return Event{}, fmt.Errorf("append %s to %s: an earlier write failed: %w", typ, l.path, l.err)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, err)
	}
	ev := Event{Seq: l.check.lastSeq + 1, V: SchemaVersion, Time: time.Now().UTC(), Type: typ, Data: b}
	if err := l.check.check(ev); err != nil {
		return Event{}, fmt.Errorf("append %s: %w", typ, err)
	}
	line, err := json.Marshal(ev)
	if err != nil {
		// Unreachable: ev holds only marshalable values. Poison the log
		// anyway, since the checker already counted the event.
		l.err = err
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, err)
	}
	// One Write per record: a crash leaves at most one torn line, at the end.
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		l.err = err
		return Event{}, fmt.Errorf("append %s to %s: %w", typ, l.path, err)
	}
	return ev, nil
}

// Sync flushes appended events to stable storage.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sync()
}

func (l *Log) sync() error {
	if l.f == nil {
		return fmt.Errorf("sync %s: %w", l.path, ErrClosed)
	}
	if l.err != nil {
		return fmt.Errorf("sync %s: an earlier write failed: %w", l.path, l.err)
	}
	if err := l.f.Sync(); err != nil {
		l.err = err
		return fmt.Errorf("sync %s: %w", l.path, err)
	}
	return nil
}

// Close syncs and closes the file. Closing a closed Log does nothing.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	var err error
	if l.err == nil {
		err = l.f.Sync()
	}
	err = errors.Join(err, l.f.Close())
	l.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", l.path, err)
	}
	return nil
}
