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
)

// The shown journal keeps what the editor was shown of a reply that is not
// committed yet, beside the log (ShownPath), so the log itself never holds a
// record per chunk: a reply is one assistant/message. Each shown update's
// chunks reach the journal with one write (no fsync: a killed process loses
// nothing written) before the update is sent; once the reply's message is
// in the log, the journal is emptied. A process that finds a turn left
// open by a dead one reads the journal to commit what its user saw.
//
// A journal line is an AssistantChunk (with Shown set). Chunks whose
// message the log has committed, or of another turn than the open one, are
// stale (the process died between the commit and emptying the journal) and
// are ignored.

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
	if err := l.usable("record shown text in"); err != nil {
		return err
	}
	if !l.locked {
		return fmt.Errorf("record shown text in %s: %w", l.path, ErrNotLocked)
	}
	if err := l.flush(); err != nil {
		return err
	}
	l.shownBuf = l.shownBuf[:0]
	for _, c := range chunks {
		c.Shown = true
		b, err := json.Marshal(c)
		if err != nil {
			return fmt.Errorf("encode shown chunk: %w", err)
		}
		l.shownBuf = append(append(l.shownBuf, b...), '\n')
	}
	if len(l.shownBuf) == 0 {
		return nil
	}
	if l.shown == nil {
		f, err := os.OpenFile(ShownPath(l.path), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return &WriteError{Op: "open", Path: ShownPath(l.path), Err: err}
		}
		l.shown, l.shownW = f, io.Writer(f)
		if l.wrap != nil {
			l.shownW = l.wrap(l.shownW)
		}
	}
	if _, err := l.shownW.Write(l.shownBuf); err != nil {
		// A torn line at its end is dropped when the journal is read.
		return &WriteError{Op: "write", Path: ShownPath(l.path), Err: err}
	}
	l.shownSize += int64(len(l.shownBuf))
	return nil
}

// ClearShown empties the shown journal: call it once the reply it holds is
// committed in the log (synced). A journal that could not be emptied is
// harmless: its chunks are stale from then on.
func (l *Log) ClearShown() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown == nil {
		// Opened by this Log or not, a journal a dead process left may
		// exist: empty it if so.
		if fi, err := os.Stat(ShownPath(l.path)); err != nil || fi.Size() == 0 {
			return nil
		}
		if err := os.Truncate(ShownPath(l.path), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &WriteError{Op: "truncate", Path: ShownPath(l.path), Err: err}
		}
		return nil
	}
	if l.shownSize == 0 {
		return nil
	}
	if err := l.shown.Truncate(0); err != nil {
		return &WriteError{Op: "truncate", Path: ShownPath(l.path), Err: err}
	}
	l.shownSize = 0
	return nil
}

// ReadShown reads the shown journal of the log at logPath: its chunks, in
// order, without a torn last line, bounded by maxShownBytes. No journal is
// none. Lines that are not chunks are skipped and named in warnings.
func ReadShown(logPath string) (chunks []AssistantChunk, warnings []string, err error) {
	path := ShownPath(logPath)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(io.LimitReader(f, maxShownBytes), 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// ReadSlice's line is only valid until the next read.
			if line, err = readLongLine(br, bytes.Clone(line), maxShownLine); line == nil {
				warnings = append(warnings, fmt.Sprintf("%s:%d: a line over %d bytes; skipped", path, n, maxShownLine))
			}
		}
		if err != nil && err != io.EOF {
			return chunks, warnings, fmt.Errorf("read %s: %w", path, err)
		}
		body, terminated := bytes.CutSuffix(line, []byte{'\n'})
		switch {
		case len(body) == 0:
		case !terminated:
			warnings = append(warnings, fmt.Sprintf("%s:%d: torn last line; dropped", path, n))
		default:
			var c AssistantChunk
			if json.Unmarshal(body, &c) != nil || !c.Shown || c.Turn < 1 || c.Text == "" && c.Reasoning == "" {
				warnings = append(warnings, fmt.Sprintf("%s:%d: not a shown chunk; skipped", path, n))
			} else {
				chunks = append(chunks, c)
			}
		}
		if err == io.EOF {
			return chunks, warnings, nil
		}
	}
}

// UnfinishedShown is UnfinishedReply of a log whose shown text is in its
// journal: the chunks the log has (older logs kept them there) and then the
// journal's, of the open turn's messages that were not committed.
func UnfinishedShown(events []Event, journal []AssistantChunk) (u Unfinished, ok bool) {
	u, ok = UnfinishedReply(events)
	open, committed := openTurnMessages(events)
	if open == 0 {
		return u, ok
	}
	text, reasoning := []byte(u.Text), []byte(u.Reasoning)
	for _, c := range journal {
		if c.Turn != open || committed[c.MessageID] {
			continue
		}
		text, reasoning = append(text, c.Text...), append(reasoning, c.Reasoning...)
		u.Step, u.MessageID, ok = c.Step, c.MessageID, true
	}
	u.Text, u.Reasoning = string(text), string(reasoning)
	return u, ok
}

// openTurnMessages is the number of the log's last turn if it has no
// turn/end (0 otherwise), and the message ids it committed.
func openTurnMessages(events []Event) (open int, committed map[string]bool) {
	committed = map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		switch ev.Type {
		case TypeTurnEnd:
			return 0, nil
		case TypeAssistantMessage:
			var d AssistantMessage
			if Unmarshal(ev.Data, &d) == nil && d.MessageID != "" {
				committed[d.MessageID] = true
			}
		case TypeTurnStart:
			var d TurnStart
			if Unmarshal(ev.Data, &d) != nil {
				return 0, nil
			}
			return d.Turn, committed
		}
	}
	return 0, nil
}
