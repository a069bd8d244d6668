package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// IndexPath is the session index of a state directory: a file beside the
// sessions directory (not in it, so no session id can name it and globs of
// the logs do not match it).
func IndexPath(stateDir string) string {
	return filepath.Join(stateDir, "session-index.jsonl")
}

// Index lists the sessions of a state directory without reading their logs.
//
// The file (IndexPath) is JSONL: each line is a Summary, or a tombstone
// {"sessionId","deleted":true}; for each session the newest line counts
// (by updatedAt, then by position). It is a cache and never the only copy of
// anything: every line is derived from a log. Lines are appended, by any
// Rebound process, under an exclusive lock of the file; when most lines are
// outdated the file is rewritten whole (a new file renamed over it, under
// the same lock). A missing or unreadable index, a line that can't be
// decoded and a log without an entry are all rebuilt from the logs by the
// next List. A line longer than any Put writes (maxIndexLine) is skipped
// without being held in memory; a file with one, or with a torn last line,
// is rewritten by that List. Writers put a session's summary whenever they
// change its log in a way the summary shows.
//
// An Index keeps what it read in memory and, on the next List, reads only
// the lines appended since (the whole file again if it was replaced). It is
// safe for concurrent use.
type Index struct {
	stateDir string
	path     string
	warn     func(error)

	mu      sync.Mutex
	entries map[string]Summary
	file    os.FileInfo // the file entries were read from; nil before the first read
	offset  int64       // bytes of it read (whole lines)
	lines   int         // lines read from it
	// damaged is set when the file was seen to hold a line longer than
	// maxIndexLine or an unterminated tail: List then rewrites it, so
	// the next reader does not skip the same bytes again.
	damaged bool
	// sorted is entries in List's order, nil when entries changed since.
	sorted []Summary
	// scanned is set once entries were checked against the sessions
	// directory (every log has one), and cleared when the file is read
	// from its start again: a later page may then trust entries instead
	// of reading the directory.
	scanned bool
	// dir is the sessions directory as that check found it and logs the
	// ids it held (nil when every entry had a log). While the directory's
	// mtime stays the same, no log was made or removed since, and a page
	// knows which exist without a system call. trusted is false when the
	// directory had changed too shortly before it was read (less than
	// dirSlack): a change in the same tick of the file system's clock
	// would leave its mtime as it was.
	dir     os.FileInfo
	logs    map[string]bool
	trusted bool
}

// dirSlack is more than the granularity of a directory's mtime on the
// file systems a state directory lives on (a few ms on Linux).
const dirSlack = time.Second

// NewIndex returns the index of stateDir. warn, if not nil, is told of
// failures to read or write the index file: they never fail a List, which
// then reads the logs instead.
func NewIndex(stateDir string, warn func(error)) *Index {
	if warn == nil {
		warn = func(error) {}
	}
	return &Index{stateDir: stateDir, path: IndexPath(stateDir), warn: warn, entries: map[string]Summary{}}
}

// indexRecord is one line of the index file.
type indexRecord struct {
	Summary
	Deleted bool `json:"deleted,omitempty"`
}

// compactSlack is how many outdated lines the index file may hold beyond
// as many as it has sessions before List rewrites it.
const compactSlack = 1000

// maxIndexLine bounds a line of the index file, without its newline. A
// line is a Summary: an id of at most 128 bytes, a title of at most
// MaxTitleRunes characters, a time, and the cwd, which has no bound of its
// own; 64 KiB holds a cwd of PATH_MAX (4096) bytes even if each is escaped
// as \u00XX. The file is a cache any process (or crash) can damage, so a
// longer line is skipped without being read into memory; one that would
// be longer is not written, and its session is summarised from its log.
const maxIndexLine = 64 << 10

// indexLine encodes rec as a line of the index file, or reports that it
// would be longer than maxIndexLine.
func indexLine(rec indexRecord) ([]byte, bool) {
	line, err := json.Marshal(rec)
	if err != nil || len(line) > maxIndexLine {
		return nil, false
	}
	return append(line, '\n'), true
}

// Put records s as the session's summary.
func (x *Index) Put(s Summary) error {
	line, ok := indexLine(indexRecord{Summary: s})
	x.mu.Lock()
	defer x.mu.Unlock()
	if !ok {
		// Too long for the file: known here, and to other processes from
		// the log.
		if x.file != nil {
			x.apply(indexRecord{Summary: s})
		}
		return nil
	}
	if err := x.append(line); err != nil {
		return err
	}
	if x.file != nil {
		x.apply(indexRecord{Summary: s})
	}
	return nil
}

// Remove records that the session was deleted.
func (x *Index) Remove(sessionID string) error {
	line, err := json.Marshal(struct {
		SessionID string `json:"sessionId"`
		Deleted   bool   `json:"deleted"`
	}{sessionID, true})
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.apply(indexRecord{Summary: Summary{SessionID: sessionID}, Deleted: true})
	return x.append(append(line, '\n'))
}

// List returns the summary of every session that has a log in the state
// directory, most recently updated first (then by id). A log the index has
// no entry for is summarised from the log (ReadSummary) and added to it; an
// entry whose log is gone is left out. Only a sessions directory that can't
// be read fails it.
func (x *Index) List() ([]Summary, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	exists, err := x.scan()
	if err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(x.sorted))
	for _, s := range x.sorted {
		if exists(s.SessionID) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Page is part of List: from the session after after (from the start when
// after is nil; only its UpdatedAt and SessionID count), the summaries keep
// accepts, at most n of them, and whether any follow.
//
// The first page (after nil) reads as List does. A later one trusts what
// the index holds, once this Index has listed: it reads only what was
// appended to the index file since, finds where after was by binary
// search, and stats the logs of the sessions it returns, to leave out one
// that is gone. So paging through every session costs about one List, not
// one per page. A log without an entry that appears meanwhile is listed
// from the next first page; a session that changes meanwhile moves to the
// front, before the cursor, as in List.
//
// keep is called under the index's lock, in order, for each candidate;
// it must not call the Index.
func (x *Index) Page(after *Summary, n int, keep func(Summary) bool) ([]Summary, bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var exists func(id string) bool
	if after != nil && x.scanned {
		if err := x.refresh(); err != nil {
			x.warn(fmt.Errorf("read the session index %s (rebuilding it from the session logs): %w", x.path, err))
			x.reset(nil)
		}
		x.maintain()
	}
	if after != nil && x.scanned {
		exists = x.logExists()
		x.order()
	} else {
		var err error
		if exists, err = x.scan(); err != nil {
			return nil, false, err
		}
	}
	i := 0
	if after != nil {
		var found bool
		i, found = slices.BinarySearchFunc(x.sorted, *after, listOrder)
		if found {
			i++
		}
	}
	var out []Summary
	for _, s := range x.sorted[i:] {
		if !keep(s) || !exists(s.SessionID) {
			continue
		}
		if len(out) == n {
			return out, true, nil
		}
		out = append(out, s)
	}
	return out, false, nil
}

// scan brings entries up to date with the index file and the sessions
// directory: a log without an entry is summarised and its line appended.
// It returns whether a session's log exists, and leaves sorted in order.
// Called under x.mu.
func (x *Index) scan() (exists func(id string) bool, err error) {
	readAt := time.Now()
	ids, dir, err := logIDs(filepath.Join(x.stateDir, "sessions"))
	if err != nil {
		return nil, err
	}
	if err := x.refresh(); err != nil {
		x.warn(fmt.Errorf("read the session index %s (rebuilding it from the session logs): %w", x.path, err))
		x.reset(nil)
	}
	listed := 0 // ids with an entry
	var rebuilt []byte
	for _, id := range ids {
		if _, ok := x.entries[id]; ok {
			listed++
			continue
		}
		// No entry: a log older than the index, or one whose writer died
		// before it put its summary. One that can't be read is not listed
		// (it may be a log being created).
		s, err := ReadSummary(Path(x.stateDir, id))
		if err != nil {
			continue
		}
		x.apply(indexRecord{Summary: s})
		listed++
		if line, ok := indexLine(indexRecord{Summary: s}); ok {
			rebuilt = append(rebuilt, line...)
		}
	}
	if len(rebuilt) > 0 {
		if err := x.append(rebuilt); err != nil {
			x.warn(fmt.Errorf("update the session index %s: %w", x.path, err))
		}
	}
	exists = func(string) bool { return true } // every entry has its log
	x.logs = nil
	if listed != len(x.entries) {
		// Some logs are gone (deleted by hand, or by another process
		// that has not appended its tombstone yet).
		have := make(map[string]bool, len(ids))
		for _, id := range ids {
			have[id] = true
		}
		exists = func(id string) bool { return have[id] }
		x.logs = have
	}
	x.dir = dir
	x.trusted = dir != nil && readAt.Sub(dir.ModTime()) > dirSlack
	x.maintain()
	x.scanned = true
	x.order()
	return exists, nil
}

// logExists tells whether a session's log exists, for a page after the
// last scan: from what the scan read while the sessions directory is as it
// was then, else from the log itself. Called under x.mu.
func (x *Index) logExists() func(id string) bool {
	if x.trusted {
		if fi, err := os.Stat(filepath.Join(x.stateDir, "sessions")); err == nil && os.SameFile(fi, x.dir) && fi.ModTime().Equal(x.dir.ModTime()) {
			if x.logs == nil {
				return func(string) bool { return true }
			}
			return func(id string) bool { return x.logs[id] }
		}
	}
	return func(id string) bool {
		return isLog(Path(x.stateDir, id))
	}
}

// isLog reports whether a regular file is at path, as a log must be (a
// stat, which never blocks).
func isLog(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// maintain rewrites the index file when it is damaged or mostly outdated
// lines. Called under x.mu.
func (x *Index) maintain() {
	if x.file != nil && (x.damaged || x.lines > 2*len(x.entries)+compactSlack) {
		if err := x.compact(); err != nil {
			x.warn(fmt.Errorf("compact the session index %s: %w", x.path, err))
		}
		x.damaged = false // tried once: a read-only index is not retried on every List
	}
}

// order makes sorted hold entries in List's order. Called under x.mu.
func (x *Index) order() {
	if x.sorted != nil {
		return
	}
	x.sorted = make([]Summary, 0, len(x.entries))
	for _, s := range x.entries {
		x.sorted = append(x.sorted, s)
	}
	slices.SortFunc(x.sorted, listOrder)
}

// listOrder is List's order: most recently updated first, then by id.
func listOrder(a, b Summary) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	return strings.Compare(a.SessionID, b.SessionID)
}

// logIDs returns the ids of the session logs in dir, unordered, and dir as
// it was before they were read; none when dir does not exist. A log is a
// regular file: anything else named like one (a FIFO, which would block
// the read of its summary, a link, a directory) is no session.
func logIDs(dir string) ([]string, os.FileInfo, error) {
	d, err := regfile.OpenDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions: %w", err)
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions in %s: %w", dir, err)
	}
	// The type comes with each name (no stat per entry on most systems).
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, nil, fmt.Errorf("list sessions in %s: %w", dir, err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && e.Type().IsRegular() && CheckSessionID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, fi, nil
}

// reset forgets what was read, to read fi's file from its start.
func (x *Index) reset(fi os.FileInfo) {
	clear(x.entries)
	x.file, x.offset, x.lines, x.sorted, x.damaged, x.scanned = fi, 0, 0, nil, false, false
}

// refresh reads what was appended to the index file since the last read,
// or all of it if it was replaced. Called under x.mu.
func (x *Index) refresh() error {
	f, err := regfile.OpenFile(x.path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		x.reset(nil)
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	return x.readFrom(f)
}

// readFrom reads the lines of f, the index file, that were not read yet.
// It holds at most one line of maxIndexLine bytes in memory, whatever the
// file holds.
func (x *Index) readFrom(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if x.file == nil || !os.SameFile(x.file, fi) || fi.Size() < x.offset {
		x.reset(fi)
	}
	x.file = fi
	n := fi.Size() - x.offset
	if n <= 0 {
		return nil
	}
	// One byte more than a line, for its newline: a full buffer without
	// one is a line too long (and never is when all that is left fits).
	br := bufio.NewReaderSize(io.NewSectionReader(f, x.offset, n), int(min(n+1, maxIndexLine+1)))
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			x.offset += int64(len(line))
			line = line[:len(line)-1]
			if len(line) == 0 {
				continue
			}
			x.lines++
			rec, err := decodeIndexLine(line)
			if err != nil || CheckSessionID(rec.SessionID) != nil {
				continue // a line torn by a crash, or garbage: the log rebuilds it
			}
			x.apply(rec)
		case errors.Is(err, bufio.ErrBufferFull):
			// No line Put writes is this long: garbage, or a tail that
			// keeps growing. Skip it unread, to its newline or, without
			// one, to the end of what was there: an append starts a new
			// line after it.
			skipped, err := discardLine(br)
			if err != nil {
				return err
			}
			x.offset += int64(len(line)) + skipped
			x.lines++
			x.damaged = true
		case err == io.EOF:
			// Whole lines only: a line being appended is read next time.
			// If no one is appending it, a writer died mid-line.
			x.damaged = x.damaged || len(line) > 0
			return nil
		default:
			return err
		}
	}
}

// discardLine reads from br up to and including the next newline, or to
// the end, and returns how many bytes it read.
func discardLine(br *bufio.Reader) (int64, error) {
	var n int64
	for {
		b, err := br.ReadSlice('\n')
		n += int64(len(b))
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
		case err == nil, err == io.EOF:
			return n, nil
		default:
			return n, err
		}
	}
}

// apply adds one line's record to entries: a tombstone removes the
// session, a summary replaces one that is not newer.
func (x *Index) apply(rec indexRecord) {
	old, ok := x.entries[rec.SessionID]
	switch {
	case rec.Deleted:
		if !ok {
			return
		}
		delete(x.entries, rec.SessionID)
	case ok && old.UpdatedAt.After(rec.UpdatedAt):
		return // a summary read from the log before its writer put a newer one
	case ok && old.Equal(rec.Summary):
		return // this process's own Put, read back
	default:
		x.entries[rec.SessionID] = rec.Summary
	}
	x.sorted = nil
}

// decodeIndexLine decodes one line of the index file. Lines as Put writes
// them (the members in order, strings without escapes) are read without
// reflection: a list reads every line of the index once per process.
func decodeIndexLine(line []byte) (indexRecord, error) {
	if rec, ok := fastIndexLine(line); ok {
		return rec, nil
	}
	var rec indexRecord
	err := json.Unmarshal(line, &rec)
	return rec, err
}

func fastIndexLine(b []byte) (rec indexRecord, ok bool) {
	var at string
	if b, ok = bytes.CutPrefix(b, []byte(`{"sessionId":`)); !ok {
		return rec, false
	}
	if rec.SessionID, b, ok = plainString(b); !ok {
		return rec, false
	}
	if b, ok = bytes.CutPrefix(b, []byte(`,"cwd":`)); !ok {
		return rec, false
	}
	if rec.Cwd, b, ok = plainString(b); !ok {
		return rec, false
	}
	if rest, found := bytes.CutPrefix(b, []byte(`,"title":`)); found {
		if rec.Title, b, ok = plainString(rest); !ok {
			return rec, false
		}
	}
	if b, ok = bytes.CutPrefix(b, []byte(`,"updatedAt":`)); !ok {
		return rec, false
	}
	if at, b, ok = plainString(b); !ok || string(b) != "}" {
		return rec, false
	}
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return rec, false
	}
	rec.UpdatedAt = t
	return rec, true
}

// plainString reads a JSON string at the start of b that needs no
// unescaping: valid UTF-8 without '\\' or control characters.
func plainString(b []byte) (string, []byte, bool) {
	if len(b) == 0 || b[0] != '"' {
		return "", b, false
	}
	end := bytes.IndexByte(b[1:], '"')
	if end < 0 {
		return "", b, false
	}
	s := b[1 : 1+end]
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return "", b, false
		}
	}
	if !utf8.Valid(s) {
		return "", b, false
	}
	return string(s), b[2+end:], true
}

// withLock runs fn with the index file open for reading and appending and
// exclusively locked. If the file was replaced while the lock was awaited,
// the file that replaced it is locked instead.
func (x *Index) withLock(fn func(f *os.File, fi os.FileInfo) error) error {
	if err := os.MkdirAll(x.stateDir, 0o700); err != nil {
		return err
	}
	for range 10 {
		f, fi, err := x.openLocked()
		if err != nil {
			return err
		}
		if f != nil {
			return errors.Join(fn(f, fi), f.Close())
		}
	}
	return fmt.Errorf("%s keeps being replaced", x.path)
}

// openLocked opens the index file and locks it. It returns no file, and no
// error, when it must be tried again: a stray entry under the index's name
// was removed, or the file was replaced while the lock was awaited.
func (x *Index) openLocked() (*os.File, os.FileInfo, error) {
	f, err := x.openSole()
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, nil, x.removeStray(err)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := lockFileWait(f); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("lock %s: %w", x.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if cur, err := os.Stat(x.path); err == nil && os.SameFile(fi, cur) {
		return f, fi, nil
	}
	f.Close() // rewritten while we waited for the lock
	return nil, nil, nil
}

// openSole opens the index file for reading and appending, creating it; a
// name that is no regular file, or one of several names of a file, is
// regfile.ErrNotRegular.
func (x *Index) openSole() (*os.File, error) {
	f, err := regfile.OpenFile(x.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := regfile.Sole(f, x.path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeStray removes what is under the index's name instead of the file
// (why says what). The index is a cache under a name Rebound owns: a stray
// entry there (a FIFO, a link, a second name of another file) is removed,
// never followed, and the index made anew from the logs.
func (x *Index) removeStray(why error) error {
	if err := os.Remove(x.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return errors.Join(why, err)
	}
	x.warn(fmt.Errorf("removed the session index (%w); it is rebuilt from the session logs", why))
	return nil
}

// append appends whole lines to the index file. Called under x.mu.
func (x *Index) append(lines []byte) error {
	return x.withLock(func(f *os.File, fi os.FileInfo) error {
		if fi.Size() > 0 {
			// A writer that died mid-line left it unterminated: end it, so
			// the lines that follow are read.
			var last [1]byte
			if _, err := f.ReadAt(last[:], fi.Size()-1); err == nil && last[0] != '\n' {
				lines = append([]byte{'\n'}, lines...)
			}
		}
		_, err := f.Write(lines)
		return err
	})
}

// compact rewrites the index file with one line per session, dropping
// entries whose logs are gone. It holds the file's lock throughout, so no
// line appended meanwhile is lost. Called under x.mu.
func (x *Index) compact() error {
	return x.withLock(func(f *os.File, _ os.FileInfo) error {
		if err := x.readFrom(f); err != nil { // what others appended
			return err
		}
		data, lines := x.encodeAll(x.dropVanished())
		if err := replaceFile(x.stateDir, x.path, "session-index-*.tmp", data); err != nil {
			return err
		}
		fi, err := os.Stat(x.path)
		if err != nil {
			return err
		}
		x.file, x.offset, x.lines, x.damaged = fi, int64(len(data)), lines, false
		return nil
	})
}

// dropVanished drops the entries whose logs are gone and returns the ids
// of the others, sorted.
func (x *Index) dropVanished() []string {
	ids := make([]string, 0, len(x.entries))
	for id := range x.entries {
		if !isLog(Path(x.stateDir, id)) {
			delete(x.entries, id)
			x.sorted = nil
			continue
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// encodeAll is the index lines of the entries ids names, one per entry
// that fits on a line, and how many there are.
func (x *Index) encodeAll(ids []string) (data []byte, lines int) {
	var b bytes.Buffer
	for _, id := range ids {
		if line, ok := indexLine(indexRecord{Summary: x.entries[id]}); ok {
			b.Write(line)
			lines++
		}
	}
	return b.Bytes(), lines
}

// replaceFile replaces the file at path, in dir, with data, durably: a
// synced temporary file (named by pattern) renamed over it, then the
// directory synced.
func replaceFile(dir, path, pattern string, data []byte) error {
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}
