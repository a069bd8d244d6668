package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rebound-agent/rebound/internal/regfile"
)

// LastTurn is what the end of a session's log says of its last turn
// (ReadLastTurn): whether it ended, and how.
type LastTurn struct {
	// Turn is the number of the last turn/start; 0 when the log has none
	// (a session never prompted).
	Turn int
	// Started is the time of that turn/start.
	Started time.Time
	// Ended: a turn/end for it follows. Interrupted: that turn/end was
	// written for a turn whose process died (TurnEnd.Interrupted).
	Ended, Interrupted bool
	// Last is the time of the turn's last event before a turn/end written
	// for it after a crash: about when the turn stopped.
	Last time.Time
}

// Bounds of ReadLastTurn's reads from the end of a log: the first window
// holds the last turn of most logs; it grows while it holds no turn/start,
// and past the largest the log is read from its start, a line at a time.
const (
	lastTurnWindow    = 8 << 10
	maxLastTurnWindow = 2 << 20
)

// ReadLastTurn reads the last turn of the log at path from the end of the
// file, without checking or loading the log: a torn or broken line is
// skipped. Only a regular file is read, never through a link. A fork's
// copies of its parent's turns are not its own: a fork that ran none
// reads as never prompted.
func ReadLastTurn(path string) (LastTurn, error) {
	return readLastTurn(path, lastTurnWindow, maxLastTurnWindow)
}

func readLastTurn(path string, firstWindow, maxWindow int64) (LastTurn, error) {
	f, err := regfile.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return LastTurn{}, openError(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return LastTurn{}, fmt.Errorf("read the last turn of %s: %w", path, err)
	}
	size := fi.Size()
	for window := firstWindow; window <= maxWindow; window *= 4 {
		off := max(size-window, 0)
		buf := make([]byte, size-off)
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return LastTurn{}, fmt.Errorf("read the last turn of %s: %w", path, err)
		}
		buf = buf[:n] // less when the file was cut meanwhile
		if off > 0 {
			// The window's first line is most likely a part of one.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				continue
			}
			buf = buf[i+1:]
		}
		var fold lastTurnFold
		for line := range bytes.SplitSeq(buf, []byte{'\n'}) {
			fold.add(line)
		}
		if fold.found || off == 0 {
			return unlessCopied(f, fold.result()), nil
		}
	}
	lt, err := readLastTurnForward(f, path)
	if err != nil {
		return LastTurn{}, err
	}
	return unlessCopied(f, lt), nil
}

// unlessCopied is lt, or no turn when lt is one a fork copied from its
// parent (session/fork): those turns, dated when the fork was made,
// started nothing in this log.
func unlessCopied(f *os.File, lt LastTurn) LastTurn {
	if lt.Turn > 0 && lt.Turn <= forkedAt(f) {
		return LastTurn{}
	}
	return lt
}

// maxStartLine bounds the read of a log's first line, its session/start.
const maxStartLine = 1 << 20

// forkedAt is the parent's turn the log's session/start says it was forked
// at (the last it copied), or 0: not a fork, or a first line that cannot
// be read whole.
func forkedAt(f *os.File) int {
	br := bufio.NewReader(io.NewSectionReader(f, 0, maxStartLine))
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		line, err = readLongLine(br, bytes.Clone(line), maxStartLine)
	}
	if err != nil || line == nil {
		return 0
	}
	var ev struct {
		Type string       `json:"type"`
		Data SessionStart `json:"data"`
	}
	if json.Unmarshal(line, &ev) != nil || ev.Type != TypeSessionStart || ev.Data.ForkedFrom == nil {
		return 0
	}
	return ev.Data.ForkedFrom.Turn
}

// readLastTurnForward reads the last turn from the start of the log, for a
// turn longer than the largest window: a line at a time, each bounded as
// ReadSummary bounds them.
func readLastTurnForward(f *os.File, path string) (LastTurn, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return LastTurn{}, fmt.Errorf("read the last turn of %s: %w", path, err)
	}
	var fold lastTurnFold
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line, err = readLongLine(br, bytes.Clone(line), maxSummaryLine)
		}
		if err != nil && err != io.EOF {
			return LastTurn{}, fmt.Errorf("read the last turn of %s: %w", path, err)
		}
		fold.add(line)
		fold.keep() // line is only valid until the next read
		if err == io.EOF {
			return fold.result(), nil
		}
	}
}

// lastTurnFold follows a log's lines to its last turn. Only lines that
// may be a turn's start or end are decoded whole; of the others, the last
// two are kept, undecoded, for the time: the last line of a log cut by a
// kill may be torn, and then the one before it dates the turn.
type lastTurnFold struct {
	lt    LastTurn
	found bool
	// prev and before are the turn's last lines before its end, when not
	// yet decoded; borrowed: prev is the line last added, which a reader
	// may reuse.
	prev, before []byte
	borrowed     bool
}

var turnType = []byte(`"turn/`)

func (f *lastTurnFold) add(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if bytes.Contains(line, turnType) {
		var ev struct {
			Time time.Time `json:"time"`
			Type string    `json:"type"`
			Data struct {
				Turn        int  `json:"turn"`
				Interrupted bool `json:"interrupted"`
			} `json:"data"`
		}
		if json.Unmarshal(line, &ev) != nil {
			return // torn or broken: skipped, as ReadSummary does
		}
		switch {
		case ev.Type == TypeTurnStart:
			f.lt, f.found, f.prev, f.before, f.borrowed = LastTurn{Turn: ev.Data.Turn, Started: ev.Time, Last: ev.Time}, true, nil, nil, false
			return
		case ev.Type == TypeTurnEnd && f.found && ev.Data.Turn == f.lt.Turn && !f.lt.Ended:
			f.lt.Ended, f.lt.Interrupted = true, ev.Data.Interrupted
			if !ev.Data.Interrupted {
				f.lt.Last, f.prev, f.before, f.borrowed = ev.Time, nil, nil, false
			}
			return
		}
	}
	if f.found && !f.lt.Ended {
		f.before, f.prev, f.borrowed = f.prev, line, true
	}
}

// keep copies the line held for its time when it is the one last added,
// which the reader's next read overwrites.
func (f *lastTurnFold) keep() {
	if f.borrowed {
		f.prev, f.borrowed = bytes.Clone(f.prev), false
	}
}

func (f *lastTurnFold) result() LastTurn {
	for _, line := range [][]byte{f.prev, f.before} {
		var ev struct {
			Time time.Time `json:"time"`
		}
		if line != nil && json.Unmarshal(line, &ev) == nil {
			if ev.Time.After(f.lt.Last) {
				f.lt.Last = ev.Time
			}
			break
		}
	}
	return f.lt
}

// Held reports whether a Log, in this process or another, holds the lock of
// the session's log now (a turn runs in it). It finds out by taking the
// lock and letting go of it at once, as a load does: a use that tries to
// take it in that instant is told the session is busy.
func Held(stateDir, sessionID string) (bool, error) {
	if err := CheckSessionID(sessionID); err != nil {
		return false, err
	}
	f, err := regfile.OpenFile(Path(stateDir, sessionID), os.O_RDONLY, 0)
	if err != nil {
		return false, openError(err)
	}
	defer f.Close()
	switch err := lockFile(f); {
	case errors.Is(err, errLockHeld):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("lock session log %s: %w", f.Name(), err)
	}
	return false, nil // closing f lets go of the lock
}
