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

	"github.com/rebound-agent/rebound/internal/regfile"
)

// The shown journal keeps what the editor was shown of a reply that is not
// committed yet, beside the log (ShownPath), so the log itself never holds a
// record per chunk: a reply is one assistant/message. Each shown update's
// chunks reach the journal with one write (no fsync: a killed process loses
// nothing written) before the update is sent; once the reply's message is
// in the log, the journal is emptied. A process that finds a turn left
// open by a dead one reads the journal to commit what its user saw.
//
// A journal line is a ShownChunk: an AssistantChunk (with Shown set) and the
// session it was shown in. A chunk counts only if it is this session's, of
// the open turn, under the message the turn's last step/start names (the
// log says which message the attempt's text goes under before any of it is
// shown), and that message is not committed. Anything else is stale (the
// process died between the commit and emptying the journal) or not this
// session's (a journal copied from another one), and is ignored: it is
// never committed as this session's reply, and never hides the session's
// own chunks around it.
//
// A journal is written only by a Log that holds the log's lock, and only
// for the turn it runs under that lock: whoever takes the lock first reads
// the journal a dead process left (to commit what it showed), so when the
// first chunk of a lock's hold is written, what is at the journal's path is
// dead, and is replaced by a new file (never opened, so a link planted
// there leads nowhere; emptying it truncates only that file).

// ShownChunk is one line of the shown journal. SessionID is empty in a
// journal written before chunks named their session (see UnfinishedShown).
type ShownChunk struct {
	SessionID string `json:"sessionId,omitempty"`
	AssistantChunk
}

// ShownPath is where the shown journal of a session's log lives: beside
// the log, under a name the session list does not read.
func ShownPath(logPath string) string { return logPath + ".shown" }

// Bounds on reading a journal: a reply's shown text is bounded by the
// provider's reply limit, so a journal past these is not Rebound's.
const (
	maxShownBytes = 256 << 20
	maxShownLine  = 16 << 20
)

// WriteShown appends chunks to the shown journal with one write, after
// writing what the log has pending (so every record before them is in the
// file too). It does not sync.
func (l *Log) WriteShown(chunks ...AssistantChunk) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.file.usable("record shown text in"); err != nil {
		return err
	}
	if !l.file.locked {
		return fmt.Errorf("record shown text in %s: %w", l.file.path, ErrNotLocked)
	}
	if err := l.flush(); err != nil {
		return err
	}
	return l.shown.write(l.file.id, chunks)
}

// ClearShown empties the shown journal: call it once the reply it holds is
// committed in the log (synced). A journal that could not be emptied is
// harmless: its chunks are stale from then on.
func (l *Log) ClearShown() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shown.clear()
}

// shownJournal is a Log's shown journal at path: the file this Log
// created, once it wrote to it, and how much it holds. Its owner calls it
// only while it holds the log's lock (see above).
type shownJournal struct {
	path string
	f    *os.File
	w    io.Writer // f, through wrap
	buf  []byte
	size int64
	// wrap is the Log's WrapWriter seam, applied to the file when it is
	// opened.
	wrap func(io.Writer) io.Writer
}

// write appends chunks, shown in session id, with one write.
func (j *shownJournal) write(id string, chunks []AssistantChunk) error {
	j.buf = j.buf[:0]
	for _, c := range chunks {
		c.Shown = true
		b, err := json.Marshal(ShownChunk{SessionID: id, AssistantChunk: c})
		if err != nil {
			return fmt.Errorf("encode shown chunk: %w", err)
		}
		j.buf = append(append(j.buf, b...), '\n')
	}
	if len(j.buf) == 0 {
		return nil
	}
	if j.f == nil {
		if err := j.create(); err != nil {
			return err
		}
	}
	if _, err := j.w.Write(j.buf); err != nil {
		// A torn line at its end is dropped when the journal is read.
		return &WriteError{Op: "write", Path: j.path, Err: err}
	}
	j.size += int64(len(j.buf))
	return nil
}

// create makes a new file at path. What is at the path is dead (see
// above), and may be anything (a link, a FIFO); removing a name never
// touches what it leads to, and O_EXCL never follows a link.
func (j *shownJournal) create() error {
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &WriteError{Op: "replace", Path: j.path, Err: err}
	}
	f, err := regfile.OpenFile(j.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return &WriteError{Op: "open", Path: j.path, Err: err}
	}
	j.f, j.w = f, io.Writer(f)
	if j.wrap != nil {
		j.w = j.wrap(j.w)
	}
	return nil
}

// clear empties the journal.
func (j *shownJournal) clear() error {
	if j.f == nil {
		// Not opened by this Log: a journal a dead process left may exist.
		// It is removed, never truncated by name: whatever is at the path,
		// a link included, only the name goes.
		if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &WriteError{Op: "delete", Path: j.path, Err: err}
		}
		return nil
	}
	if j.size == 0 {
		return nil
	}
	// The file this Log created (O_EXCL), through its descriptor: what is
	// at the path now does not matter.
	if err := j.f.Truncate(0); err != nil {
		return &WriteError{Op: "truncate", Path: j.path, Err: err}
	}
	j.size = 0
	return nil
}

// close closes the journal's file, if open; remove (only while the lock is
// held) deletes it too when it is empty, so a session whose replies were
// all committed leaves no file beside its log.
func (j *shownJournal) close(remove bool) error {
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	if remove && j.size == 0 {
		if rerr := os.Remove(j.path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	j.f, j.w, j.size = nil, nil, 0
	return err
}

// wrapWith makes the journal write through wrap too, from now on.
func (j *shownJournal) wrapWith(wrap func(io.Writer) io.Writer) {
	prev := j.wrap
	j.wrap = func(w io.Writer) io.Writer {
		if prev != nil {
			w = prev(w)
		}
		return wrap(w)
	}
	if j.w != nil {
		j.w = wrap(j.w)
	}
}

// ReadShown reads the shown journal of the log at logPath: its chunks, in
// order, without a torn last line, bounded by maxShownBytes. No journal is
// none. Lines that are not chunks are skipped and named in warnings. Only
// a regular file is read, never through a link: anything else there is an
// error at once (a FIFO would block).
func ReadShown(logPath string) (chunks []ShownChunk, warnings []string, err error) {
	path := ShownPath(logPath)
	f, err := regfile.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, maxShownBytes), 64<<10)
	for n := 1; ; n++ {
		line, long, err := nextShownLine(br)
		if long {
			warnings = append(warnings, fmt.Sprintf("%s:%d: a line over %d bytes; skipped", path, n, maxShownLine))
		}
		if err != nil && err != io.EOF {
			return chunks, warnings, fmt.Errorf("read %s: %w", path, err)
		}
		if c, ok, warning := parseShownLine(line, path, n); ok {
			chunks = append(chunks, c)
		} else if warning != "" {
			warnings = append(warnings, warning)
		}
		if err == io.EOF {
			return chunks, warnings, nil
		}
	}
}

// nextShownLine is the next line of a journal, with its newline if it has
// one; a line over maxShownLine bytes is read to its end and skipped (nil,
// long).
func nextShownLine(br *bufio.Reader) (line []byte, long bool, err error) {
	line, err = br.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		return line, false, err
	}
	// ReadSlice's line is only valid until the next read.
	line, err = readLongLine(br, bytes.Clone(line), maxShownLine)
	return line, line == nil, err
}

// parseShownLine reads line n of the journal at path: a chunk (ok), or a
// warning that says why it is none. An empty line is neither.
func parseShownLine(line []byte, path string, n int) (c ShownChunk, ok bool, warning string) {
	body, terminated := bytes.CutSuffix(line, []byte{'\n'})
	switch {
	case len(body) == 0:
		return c, false, ""
	case !terminated:
		return c, false, fmt.Sprintf("%s:%d: torn last line; dropped", path, n)
	}
	if json.Unmarshal(body, &c) != nil || !c.Shown || c.Turn < 1 || c.Text == "" && c.Reasoning == "" {
		return ShownChunk{}, false, fmt.Sprintf("%s:%d: not a shown chunk; skipped", path, n)
	}
	return c, true, ""
}

// UnfinishedShown is UnfinishedReply of the log of session sessionID
// whose shown text is in its journal: the chunks the log has (older logs
// kept them there) and then the journal's that are this session's, of the
// open turn, under the message its last step/start names, not committed.
//
// A journal from before chunks named their session (no SessionID) was
// written by a Rebound whose step/start named no message either: its
// chunks count only when the open turn's last step/start names none (that
// Rebound wrote it and died in it; its journal is the only record of what
// the user saw, so it is committed as before, by turn and uncommitted
// message). Under a step/start that names its message, this Rebound wrote
// the turn, and an unnamed chunk cannot be its own.
func UnfinishedShown(events []Event, sessionID string, journal []ShownChunk) (u Unfinished, ok bool) {
	u, ok = UnfinishedReply(events)
	open, committed, msg, stepped := openTurnMessages(events)
	if open == 0 || !stepped {
		return u, ok
	}
	text, reasoning := []byte(u.Text), []byte(u.Reasoning)
	for _, c := range journal {
		if c.Turn != open || committed[c.MessageID] {
			continue
		}
		if msg != "" && (c.SessionID != sessionID || c.MessageID != msg) || msg == "" && c.SessionID != "" {
			continue
		}
		text, reasoning = append(text, c.Text...), append(reasoning, c.Reasoning...)
		u.Step, u.MessageID, ok = c.Step, c.MessageID, true
	}
	u.Text, u.Reasoning = string(text), string(reasoning)
	return u, ok
}

// openTurnMessages is the number of the log's last turn if it has no
// turn/end (0 otherwise), the message ids it committed, the message its
// last step/start names ("" when it names none), and whether it has a
// step/start at all.
func openTurnMessages(events []Event) (open int, committed map[string]bool, msg string, stepped bool) {
	committed = map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		switch ev.Type {
		case TypeTurnEnd:
			return 0, nil, "", false
		case TypeAssistantMessage:
			var d AssistantMessage
			if Unmarshal(ev.Data, &d) == nil && d.MessageID != "" {
				committed[d.MessageID] = true
			}
		case TypeStepStart:
			var d StepStart
			if !stepped && Unmarshal(ev.Data, &d) == nil {
				msg, stepped = d.MessageID, true
			}
		case TypeTurnStart:
			var d TurnStart
			if Unmarshal(ev.Data, &d) != nil {
				return 0, nil, "", false
			}
			return d.Turn, committed, msg, stepped
		}
	}
	return 0, nil, "", false
}
